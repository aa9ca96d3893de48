$HC run out x --input x.npy -o y.npy --device gpu
