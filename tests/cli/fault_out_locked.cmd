# a second convert into an OUT that a convert holds fails at once (exit 3) and writes nothing;
# with --tp the one lock on OUT covers the rank folders
mkdir out
rc=0
flock -n out/.hconvert.lock "$HC" convert "$FIX/quant/ct_moe_qwen3" out --tp 2 2>err >/dev/null || rc=$?
echo "tp 2: exit $rc, $(grep -c 'another convert' err) message, $(ls out | wc -l) files"
flock -n out/.hconvert.lock "$HC" convert "$FIX/ckpt/demo" out
