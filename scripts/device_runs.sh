#!/usr/bin/env bash
# The runs made on a lent GPU machine (the `device` tool): each step writes what it measures or trains under
# $OUT. Usage there:  bash scripts/device_runs.sh cos latency llava tabed-seeds multilingual
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
for step in "$@"; do
  echo "== $step $(date +%T)"
  case $step in
    cos)  # notebook 20's grid on the GPU
      python3 -m specdec.cos.experiments --device cuda --rows .gpu/cos_rows.json --out "$OUT/cos_main_gpu.csv" 2>&1 | grep -v "it/s]" ;;
    latency)  # notebook 01(c): random-weight LLaVA-1.5 7B/13B and 68M/160M drafts in fp16
      python3 -c "
import os, pathlib
from specdec import bench
from specdec.zoo.models import load_profile
from specdec.results import ResultStore
store = ResultStore('tiny', 'latency_real_sizes', key=['model', 'device', 'B', 'S', 'gamma'],
                    root=pathlib.Path(os.environ['OUT']) / 'results')
bench.real_size_latency(store, load_profile('paper')['latency_configs'], batch_sizes=[1, 2, 4],
                        contexts=[128, 1024], gammas=[1, 2, 4, 8], repeats=10)
print(store.frame().to_string())" ;;
    llava)  # the TABED tiny zoo
      python3 -m specdec.vlm.train train --data .gpu/tabed_data.pt --device cuda --out /tmp/llava \
        --models tabed-target tabed-draft > "$OUT/llava_log.txt" 2>&1  # per-model steps / weight decay
      tail -n 5 "$OUT/llava_log.txt"; tar czf "$OUT/tabed_models.tgz" -C /tmp/llava . ;;
    tabed-seeds)  # Table 3's long-answer pair (seed 0; its draft also seeds 1, 2) and tabed-draft's seeds 1, 2
      T="python3 -m specdec.vlm.train train --device cuda"
      $T --data .gpu/tabed_data_full.pt --out "$OUT/models" --models tabed-target-long > "$OUT/long_target.txt" 2>&1 &
      $T --data .gpu/tabed_data_full.pt --out "$OUT/models" --models tabed-draft-long --seeds 0 1 2 \
        > "$OUT/long_drafts.txt" 2>&1 &
      $T --data .gpu/tabed_data.pt --out "$OUT/models" --models tabed-draft --seeds 1 2 > "$OUT/draft_seeds.txt" 2>&1 &
      wait; tail -n 2 "$OUT"/*.txt | cut -c1-400 ;;
    multilingual)
      python3 -m specdec.multilingual.train train --data .gpu/ml_data.pt --device cuda --out /tmp/ml \
        ${ML_ARGS:-} > "$OUT/ml_log.txt" 2>&1
      tail -n 5 "$OUT/ml_log.txt"; tar czf - -C /tmp/ml . | split -b 15m - "$OUT/ml_models.tgz." ;;  # files come back in <16 MiB parts
    cos-seeds)  # the CoS zoo's training seeds 1 and 2: ten processes, one model each, sharing the GPU
      for k in 1 2; do for m in cos-general cos-code cos-math cos-amateur cos-expert; do
        OMP_NUM_THREADS=1 python3 -m specdec.cos.train train --streams .gpu/cos_streams.pt --device cuda \
          --train-seed "$k" --out "/tmp/cos/seed$k" --models "$m" > "$OUT/cos_seed${k}_$m.txt" 2>&1 &
      done; done
      wait; tail -qn 1 "$OUT"/cos_seed*.txt | cut -c1-300
      for k in 1 2; do tar czf "$OUT/cos_seed$k.tgz" -C "/tmp/cos/seed$k" .; done
      mkdir -p "$OUT/logs"; mv "$OUT"/cos_seed*.txt "$OUT/logs/" 2>/dev/null; tar czf "$OUT/cos_seed_logs.tgz" -C "$OUT" logs
      rm -rf "$OUT/logs" ;;
  esac
done
echo "== done $(date +%T)"
