// convert_demo: the cudnn.torch README's example: build a network from nn modules, print it,
// convert it to cudnn (all of it, then with the ReLU excluded), print it again, and check
// that nn and cudnn compute the same output. Needs a GPU for the cudnn half.
#include <cstdio>
#include <string>

#include "convert/Convert.h"
#include "samples/Args.h"
#include "samples/Networks.h"
#include "tensor/Cuda.h"

int main(int argc, char** argv) {
  samples::Args args(argc, argv,
                     "usage: convert_demo\n"
                     "  Builds the README's network, prints it, converts it to cudnn (all of it, then\n"
                     "  with the ReLU excluded) and back, and checks that the outputs agree. Needs a\n"
                     "  GPU for the cudnn half; without one it prints the network and exits 0.\n"
                     "  --help            this text\n");
  while (args.more()) {
    const std::string flag = args.flag();
    if (flag == "--help" || flag == "-h") args.usage(0);
    args.fail("unknown option " + flag + " (convert_demo takes none)");
  }
  try {
    tensor::manual_seed(1);
    std::shared_ptr<nn::Module> net = samples::readme_network();
    std::printf("built:\n%s\n\n", net->str().c_str());
    if (!tensor::cuda::is_available()) {
      std::printf("no CUDA device visible: converting to cudnn needs one (the network stays in nn)\n");
      return 0;
    }
    tensor::Generator gen(2);
    const tensor::Tensor x = tensor::uniform({4, 3, 64, 64}, -1, 1, gen);
    const tensor::Tensor reference = net->forward(x).clone();

    // exclude the ReLU: it stays an nn module, and the network still runs (Note [Device bridging])
    auto partly = nn::convert(net, cudnn::backend, [](const nn::Module& m) { return m.type_name() == "nn.ReLU"; });
    std::printf("converted, excluding nn.ReLU:\n%s\n\n", partly->str().c_str());
    const double err_partly = tensor::rel_norm_error(partly->forward(x.to(tensor::Device::cuda())), reference);

    auto full = nn::convert(partly, cudnn::backend);
    std::printf("converted:\n%s\n\n", full->str().c_str());
    const double err_full = tensor::rel_norm_error(full->forward(x.to(tensor::Device::cuda())), reference);

    auto back = nn::convert(full, nn::backend);
    std::printf("back to nn:\n%s\n\n", back->str().c_str());
    const double err_back = tensor::rel_norm_error(back->forward(x), reference);

    std::printf("relative difference from the nn output: partly converted %.2e, converted %.2e, back in nn %.2e\n",
                err_partly, err_full, err_back);
    const bool ok = err_partly < 1e-3 && err_full < 1e-3 && err_back == 0;  // TF32 may be on for the GPU
    std::printf("%s\n", ok ? "outputs agree" : "OUTPUTS DIFFER");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convert_demo: %s\n", e.what());
    return 1;
  }
}
