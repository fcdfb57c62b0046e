#!/bin/sh
# Bench stand-in for a judge that takes its own time (W15): it sleeps for the seconds its prompt
# names (`sleep=S` anywhere in its arguments), then prints a passing plain-text verdict.
#
# A POSIX shell script, not Python: W15 holds eb's wall time to the bound of the drawn sleeps,
# and a Python stand-in's own interpreter start (20 to 30 ms per judge, eight judges deep per
# worker) would be charged to eb's scheduling. This one starts in about a millisecond.
for argument in "$@"; do
  case "$argument" in
    *sleep=*)
      seconds=${argument#*sleep=}
      seconds=${seconds%%[!0-9.]*}
      sleep "$seconds"
      break
      ;;
  esac
done
printf '%s\n' '{"score": 1, "reason": "ok"}'
