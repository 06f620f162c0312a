// pilot-test-model OUT.pt LABEL... < BODY: writes a TorchScript "text" model (input_kind text,
// the labels given) whose methods are the TorchScript source read from stdin. The hostile
// catalogue builds models with it that fail in chosen ways (an exception whose message holds
// ESC sequences and markup), to follow such text from a model into every report.
#include <torch/script.h>

#include <iostream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: pilot-test-model OUT.pt LABEL... < torchscript-source\n";
    return 2;
  }
  const std::string body((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    torch::jit::Module m("TestModel");
    c10::List<std::string> labels;
    for (int i = 2; i < argc; ++i) labels.push_back(argv[i]);
    m.register_attribute("labels", c10::ListType::ofStrings(), labels);
    m.register_attribute("input_kind", c10::StringType::get(), std::string("text"));
    m.define(body);
    m.save(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "pilot-test-model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
