// test_VolumetricFullConvolution.cpp
