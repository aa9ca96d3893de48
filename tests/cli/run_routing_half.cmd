$HC run out x --input x.npy -o y.npy --topk-ids i.npy
