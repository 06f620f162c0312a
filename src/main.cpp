// pilot: the command-line entry point. Everything happens in the library; see src/cli/.
#include "cli/cli.h"

int main(int argc, char** argv) { return pilot::cli::Main(argc, argv); }
