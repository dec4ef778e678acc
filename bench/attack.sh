#!/usr/bin/env bash
# A scripted attacker (issue 32): tries each weakness of the agents that issue 32 named, on
# loopback only (and the emulator's own namespaces where a test makes them), each attempt
# bounded in count and time by its test, and prints what it got. Every attack is a test that
# fails if the attacker gets anything; run as root (the forged-source hello needs a raw socket).
#
#   bash bench/attack.sh            # all attacks, a line each: "nothing" or what it got
set -u
cd "$(dirname "$0")/.."
attacks=(
  "reflect a reverse UDP test at a forged source (raw socket, 127.0.0.2)|-p weft-probe --test reflection a_forged_udp_hello_gets_the_victim_nothing"
  "keep a reverse UDP stream flowing at a closed port|-p weft-probe --test reflection a_reverse_udp_stream_stops_when_its_peer_refuses"
  "learn the agent's MAC without proving the key|-p weft-probe --test keyed the_agent_proves_nothing"
  "inject an untagged request after a keyed handshake|-p weft-probe --test keyed a_message_without_its_tag"
  "relay toward loopback, link-local, the agent's own address|-p weft-probe --test relay a_protected_agent"
  "starve a sixth source from five busy ones|-p weft-gate --lib five_busy_sources_cannot_starve_a_sixth"
  "guess a short key; read a key file left open|-p weft --test agents_hostile short_keys_are_refused"
  "reach a keyless receiver from another address|-p weft --test agents_hostile a_keyless_receiver"
  "pin memory with sessions; leave part files for ever|-p weft --test agents_hostile all_sessions_together"
  "write a file through SBTP/MBTP/xxh3 under a key|-p weft --test xfer_checksum a_keyed_receiver_refuses"
  "inject mp daemon packets from another run|-p weft-sock --lib packets_of_another_run_are_ignored"
  "speak for an mp daemon from outside the roster, token known|-p weft-sock --lib a_forger_who_knows_the_token_but_is_not_in_the_roster_is_not_heard"
  "write a capture outside --capture (switch name, symlink)|-p weft-model --lib captures_replace_links"
  "make weft emu down signal a reused process id|-p weft-emu --lib a_reused_process_id"
)
failed=0
for a in "${attacks[@]}"; do
  what=${a%%|*}
  args=${a#*|}
  # shellcheck disable=SC2086 # the test selection is word-split on purpose
  if out=$(timeout 600 cargo test -q $args -- --test-threads 1 2>&1); then
    if ! grep -q "^test result: ok. [1-9]" <<<"$out"; then
      # A filter that matches no test would report "got nothing" for an attack never tried.
      failed=$((failed + 1))
      printf 'attack: %-62s NOT TRIED: no test matches %s\n' "$what" "$args"
    elif grep -q "skipped:" <<<"$out"; then
      printf 'attack: %-62s skipped (%s)\n' "$what" "$(grep -m1 -o 'skipped: .*' <<<"$out")"
    else
      printf 'attack: %-62s got nothing\n' "$what"
    fi
  else
    failed=$((failed + 1))
    printf 'attack: %-62s SUCCEEDED (the test failed):\n%s\n' "$what" "$(tail -20 <<<"$out")"
  fi
done
echo "${#attacks[@]} attacks, $failed succeeded"
[ "$failed" -eq 0 ]
