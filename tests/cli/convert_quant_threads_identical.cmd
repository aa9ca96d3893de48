for c in gptoss_mxfp4 ct_nvfp4 gptq_desc_act ct_fp8_block; do
$HC convert $FIX/quant/$c a$c --threads 1 >/dev/null
$HC convert $FIX/quant/$c b$c --threads 2 >/dev/null
cmp a$c/model.hconvert b$c/model.hconvert
done
$HC convert $FIX/quant/moe_640_tp8 t1 --tp 4 --threads 1 >/dev/null
$HC convert $FIX/quant/moe_640_tp8 t2 --tp 4 --threads 2 >/dev/null
for r in 0 1 2 3; do cmp t1/rank$r/model.hconvert t2/rank$r/model.hconvert; done
