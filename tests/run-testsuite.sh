#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the autotest testsuite given as $1 with the remaining arguments, and
# closes with one summary line: "N passed, N failed, N skipped".
# The exit status is the testsuite's.
testsuite=$1
shift
out=${TMPDIR:-/tmp}/ovs-vhost-testsuite.$$
trap 'rm -f "$out"' EXIT
status_file=$out.status
{ $SHELL "$testsuite" "$@"; echo $? > "$status_file"; } 2>&1 | tee "$out"
status=$(cat "$status_file")
rm -f "$status_file"
passed=$(grep -cE '^ *[0-9]+: .* ok$' "$out")
failed=$(grep -cE '^ *[0-9]+: .* FAILED \(' "$out")
skipped=$(grep -cE '^ *[0-9]+: .* skipped \(' "$out")
echo
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$status" -eq 0 ] && [ "$failed" -gt 0 ]; then
  status=1
fi
exit "$status"
