#!/usr/bin/env python3
"""Clients test_serve.sh cannot make with curl: raw HTTP on a socket,
clients that leave or crawl, and images of chosen sizes (stdlib only).

  client.py raw PORT HEXFILE|-            send bytes, print the status line (or "silence" after 5 s)
  client.py abandon PORT FILE N           N POSTs of FILE on N connections, all closed 300 ms after the last is sent
  client.py slowloris PORT SRC_ADDR N S   N connections from SRC_ADDR sending one header byte every S s,
                                          for 6*S s; prints how many the server closed or refused
  client.py bmp W H OUT                   a W x H 24-bit BMP with dark bars (text-like strokes)
  client.py png_gray W H OUT              a W x H 8-bit gray PNG, all white (compresses to little)
  client.py png_header W H OUT            a PNG that is only its W x H header (what admission reads)
"""
import socket
import struct
import sys
import threading
import time
import zlib


def raw(port, data):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    s.sendall(data)
    try:
        got = s.recv(4096)
    except socket.timeout:
        got = b""
    s.close()
    print(got.split(b"\r\n", 1)[0].decode("latin-1") if got else "silence")


def abandon(port, path, n):
    body = open(path, "rb").read()
    req = (b"POST /v1/ocr HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    socks = []
    for _ in range(n):  # all sent, then all closed together: the server has read each before it sees them go
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req)
        socks.append(s)
    time.sleep(0.3)
    for s in socks:
        s.close()


def slowloris(port, src, n, period):
    socks, closed = [], [0]
    for _ in range(n):
        try:
            s = socket.socket()
            s.bind((src, 0))
            s.connect(("127.0.0.1", port))
            socks.append(s)
        except OSError:
            closed[0] += 1  # refused: the per-address or total cap
    line = b"POST /v1/ocr HTTP/1.1\r\nHost: x\r\n"
    end = time.time() + 6 * period
    i = 0
    while time.time() < end and socks:
        for s in list(socks):
            try:
                s.send(line[i % len(line):i % len(line) + 1])
            except OSError:
                socks.remove(s)
                closed[0] += 1
        i += 1
        time.sleep(period)
    for s in socks:
        s.close()
    print(closed[0])


def bmp(w, h, out):
    row = (w * 3 + 3) & ~3
    px = bytearray(b"\xff" * (row * h))
    for y in range(h):
        if (y // 12) % 3 == 1:  # bands of strokes
            for x in range(w // 10, w - w // 10):
                if (x // 5) % 2:
                    o = (h - 1 - y) * row + 3 * x
                    px[o:o + 3] = b"\x10\x10\x10"
    hdr = b"BM" + struct.pack("<IHHI", 54 + len(px), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(px), 2835, 2835, 0, 0)
    open(out, "wb").write(hdr + info + bytes(px))


def png_gray(w, h, out):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    raw_rows = (b"\0" + b"\xff" * w) * h
    data = zlib.compress(raw_rows, 9)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
    png += chunk(b"IDAT", data) + chunk(b"IEND", b"")
    open(out, "wb").write(png)


def png_header(w, h, out):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    open(out, "wb").write(b"\x89PNG\r\n\x1a\n" + ihdr + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


cmd = sys.argv[1]
if cmd == "raw":
    data = sys.stdin.buffer.read() if sys.argv[3] == "-" else open(sys.argv[3], "rb").read()
    raw(int(sys.argv[2]), data)
elif cmd == "abandon":
    abandon(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
elif cmd == "slowloris":
    slowloris(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
elif cmd == "bmp":
    bmp(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
elif cmd == "png_header":
    png_header(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
elif cmd == "png_gray":
    png_gray(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
