# an empty X of shape (2^64 - 1, 0) used to loop 2^64 times over its rows: refused at once
# (timeout makes a hang fail the test instead of the suite)
$HC convert $FIX/quant/gptq_desc_act out >/dev/null
/usr/bin/python3 -c "
import struct, sys
d = b\"{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551615, 0), }\n\"
sys.stdout.buffer.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(d)) + d)" > x.npy
timeout 20 $HC run out model.layers.0.self_attn.q_proj --input x.npy -o y.npy
