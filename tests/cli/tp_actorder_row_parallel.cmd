# a GPTQ desc_act layer made row-parallel (q_proj renamed o_proj, same length): validate
# names the regrouping convert performs, convert --tp 8 succeeds, and every rank verifies
mkdir ck
cp $FIX/quant/gptq_desc_act/config.json ck/
sed 's/self_attn\.q_proj/self_attn.o_proj/g' $FIX/quant/gptq_desc_act/model.safetensors > ck/model.safetensors
$HC validate ck --tp 8
$HC convert ck out --tp 8 --target cpu 2>/dev/null
for r in 0 1 2 3 4 5 6 7; do $HC verify out/rank$r >/dev/null; done
$HC inspect out/rank3/model.hconvert --tensors | grep o_proj
