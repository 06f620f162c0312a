// libpilot-libtorch-name.so: an empty library whose soname is libtorch.so. An AOTInductor
// package's compiled library names libtorch.so among its dependencies, though every symbol it
// takes is in libtorch_cpu and libc10, which pilot has already loaded and made global. Loaded
// before such a package (src/stage/torch_stage.cpp, ExposeLibtorchSymbols) when no libtorch.so
// is loaded, it answers that name, so the loader neither loads the wheel's libtorch.so (which
// brings libtorch_cuda and the CUDA libraries) nor takes another libtorch.so from the system.
namespace pilot {
// Hidden: the library adds no symbol to the global scope.
__attribute__((visibility("hidden"))) int LibtorchNameStub() { return 0; }
}  // namespace pilot
