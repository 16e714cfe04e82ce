#!/usr/bin/env bash
# The CUDA modules (loaded into the program at run time, with no GPU needed to load them) must
# carry every arlsim function they call: the program exports none, so a function they leave
# undefined makes dlopen fail on a GPU machine. Checked by their undefined symbols, here without
# a GPU. Usage: cuda_module_symbols.sh BUILD_APP_DIR
set -u
dir="$1"
shopt -s nullglob
modules=("$dir"/libarlsim_*cuda*.so)
if [ ${#modules[@]} -eq 0 ]; then
  echo "no CUDA modules built: skipped"
  exit 77
fi
failed=0
for m in "${modules[@]}"; do
  missing=$(nm -D --undefined-only "$m" | awk '{print $2}' | grep '^_ZN6arlsim' | c++filt || true)
  if [ -n "$missing" ]; then
    echo "FAIL $(basename "$m") leaves arlsim functions undefined:"
    echo "$missing" | sed 's/^/  /'
    failed=1
  else
    echo "ok $(basename "$m")"
  fi
done
exit $failed
