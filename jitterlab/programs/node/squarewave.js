#!/usr/bin/env node
// Node square wave (no npm deps): fs.writeSync to the pin, chained setTimeout
// with the relative half period. Node truncates delays to whole milliseconds
// and clamps them to >= 1 ms; that is the honest result for this model.
"use strict";

const fs = require("fs");

const IMPL = "node";
const USAGE =
  "usage: squarewave.js --period-ns N --duration-ns N --pin PATH --log PATH [--prio N] [--allow-no-rt] [--mlock]";

function usage(why) {
  process.stderr.write(`squarewave.js: ${why}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const a = { periodNs: null, durationNs: null, pin: null, log: null };
  const count = (flag, v) => {
    if (!/^[0-9]+$/.test(v)) usage(`bad value for ${flag}: ${v}`);
    return BigInt(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--allow-no-rt") continue;
    if (flag === "--mlock") {
      process.stderr.write("squarewave.js: --mlock: Node.js cannot lock its memory (no mlockall)\n");
      process.exit(69); // unavailable (sysexits EX_UNAVAILABLE)
    }
    if (!["--period-ns", "--duration-ns", "--pin", "--log", "--prio"].includes(flag))
      usage(`unknown flag: ${flag}`);
    if (i + 1 >= argv.length) usage(`missing value for ${flag}`);
    const v = argv[++i];
    if (flag === "--period-ns") a.periodNs = count(flag, v);
    else if (flag === "--duration-ns") a.durationNs = count(flag, v);
    else if (flag === "--pin") a.pin = v;
    else if (flag === "--log") a.log = v;
    else count(flag, v); // --prio: accepted, ignored
  }
  if (a.periodNs === null || a.periodNs < 2n) usage("--period-ns is required and must be >= 2");
  if (a.durationNs === null) usage("--duration-ns is required");
  if (a.pin === null || a.log === null) usage("--pin and --log are required");
  return a;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const halfMs = Number(args.periodNs / 2n) / 1e6;
  const fd = fs.openSync(args.pin, "r+"); // never "w": that would truncate the mapped file
  const tNs = [];
  const levels = [];
  let timer = null;
  let finished = false;

  const edge = (level) => {
    fs.writeSync(fd, level ? "1" : "0", 0);
    tNs.push(process.hrtime.bigint());
    levels.push(level);
  };

  const finish = () => {
    if (finished) return;
    finished = true;
    if (timer !== null) clearTimeout(timer);
    if (levels[levels.length - 1] === 1) edge(0); // leave the pin at '0'
    fs.closeSync(fd);
    const lines = [`# jitterlab-edges v1 clock=monotonic impl=${IMPL}`];
    for (let i = 0; i < tNs.length; i++) lines.push(`${tNs[i]} ${levels[i]}`);
    lines.push(`# end edges=${tNs.length}`);
    const tmp = `${args.log}.tmp.${process.pid}`;
    fs.writeFileSync(tmp, lines.join("\n") + "\n");
    fs.renameSync(tmp, args.log);
    process.exit(0);
  };
  process.on("SIGTERM", finish);
  process.on("SIGINT", finish);

  const start = process.hrtime.bigint();
  let level = 1;
  const tick = () => {
    timer = null;
    if (process.hrtime.bigint() - start >= args.durationNs) {
      // Duration over: the falling edge (if due) is written by finish().
      finish();
      return;
    }
    level ^= 1;
    edge(level);
    timer = setTimeout(tick, halfMs);
  };
  edge(level);
  timer = setTimeout(tick, halfMs);
}

main();
