"""A stand-in for "our data stream": frames of a camera-sized buffer, each checksummed and
counted, for a given time. Prints `fps=N` and one JSON line of per-frame times, the two forms the
command benchmark reads (examples/command.toml).

    python3 fps.py --seconds 2 --width 640 --height 480
"""

import argparse
import json
import time
import zlib

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, required=True)
parser.add_argument("--width", type=int, default=640)
parser.add_argument("--height", type=int, default=480)
args = parser.parse_args()

frame = bytearray(args.width * args.height * 2)  # YUYV: 2 bytes per pixel
frame_ns = []
start = time.monotonic_ns()
deadline = start + int(args.seconds * 1e9)
checksum = 0
while (now := time.monotonic_ns()) < deadline:
    frame[checksum % len(frame)] = checksum & 0xFF  # a new frame differs from the last
    checksum = zlib.crc32(frame)
    frame_ns.append(time.monotonic_ns() - now)
elapsed_s = (time.monotonic_ns() - start) / 1e9

frame_ns.sort()
p99 = frame_ns[min(len(frame_ns) - 1, int(0.99 * len(frame_ns)))] if frame_ns else 0
print(f"frames={len(frame_ns)} in {elapsed_s:.3f}s fps={len(frame_ns) / elapsed_s:.2f}")
print(json.dumps({"frames": len(frame_ns), "frame_ns": {"p99": p99, "max": frame_ns[-1] if frame_ns else 0}}))
