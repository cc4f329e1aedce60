// test_VolumetricConvolution.cpp
