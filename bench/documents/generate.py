#!/usr/bin/python3
"""bench/documents/generate.py - the generated pages of the document benchmark.

Renders document pages from the word lists, items and code lines in bench/documents/texts/ (written
for this project) with Debian's fonts, and writes the ground truth: every text segment drawn, with
its box (the ink box PIL reports for it, turned with the page when the page is rotated).

  generate.py [--out DIR] [--pages N] [--seed S] [--only KIND[,KIND]]

  DIR/pages/NNN_KIND.(jpg|png)   the pages
  DIR/gt.tsv                     image_path unit box text source note (the schema of ../shared/data)
  DIR/pages.tsv                  one row per page: file kind width height dpi font size angle lines

Kinds (the default 60 pages cycle through PLAN): A4 pages at 150, 200 or 300 dpi in English, Chinese
or both (scan-like: tinted paper, slight blur and noise, JPEG), receipts 576-640 px wide in English
or Chinese (JPEG), screenshots of a code editor, an app with a table, and a chat, 600x1200 to
1920x1080 (PNG). About one scan in four is rotated by 0.5 to 3 degrees.

Deterministic: page i depends only on (seed, i); the same Pillow, FreeType and fonts (Debian 12's
python3-pil, fonts-dejavu-core, fonts-liberation, fonts-wqy-microhei, fonts-wqy-zenhei,
fonts-arphic-uming: scripts/setup.sh --bench-deps) give the same bytes.
"""
import argparse
import math
import os
import random
import re
import sys

try:
    from PIL import Image, ImageDraw, ImageFilter, ImageFont
except ImportError:
    sys.exit("generate.py: needs python3-pil (scripts/setup.sh --bench-deps)")

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = os.path.join(HERE, "texts")

# (path, index in a collection); Debian package in the comment
FONT_FILES = {
    "dejavu-sans": ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 0),  # fonts-dejavu-core
    "dejavu-sans-bold": ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 0),
    "dejavu-serif": ("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", 0),
    "dejavu-mono": ("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", 0),
    "liberation-sans": ("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", 0),  # fonts-liberation
    "liberation-sans-bold": ("/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf", 0),
    "liberation-serif": ("/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf", 0),
    "liberation-serif-bold": ("/usr/share/fonts/truetype/liberation/LiberationSerif-Bold.ttf", 0),
    "liberation-mono": ("/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf", 0),
    "wqy-microhei": ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),  # fonts-wqy-microhei
    "wqy-microhei-mono": ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 1),
    "wqy-zenhei": ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0),  # fonts-wqy-zenhei
    "ar-pl-uming": ("/usr/share/fonts/truetype/arphic/uming.ttc", 0),  # fonts-arphic-uming
}
EN_BODY = ["dejavu-sans", "dejavu-serif", "liberation-sans", "liberation-serif"]
EN_BOLD = {"dejavu-sans": "dejavu-sans-bold", "dejavu-serif": "dejavu-sans-bold",
           "liberation-sans": "liberation-sans-bold", "liberation-serif": "liberation-serif-bold"}
ZH_BODY = ["wqy-microhei", "wqy-zenhei", "ar-pl-uming"]
EN_MONO = ["dejavu-mono", "liberation-mono"]
ZH_MONO = ["wqy-microhei-mono", "wqy-zenhei"]

PLAN = ["a4_en", "a4_zh", "receipt_zh", "screen_code", "a4_en", "a4_mixed", "receipt_en", "screen_ui",
        "a4_zh", "a4_en", "screen_chat", "receipt_zh", "a4_en", "a4_zh", "receipt_en"]

_font_cache = {}


def font(name, px):
    key = (name, int(px))
    if key not in _font_cache:
        path, index = FONT_FILES[name]
        if not os.path.exists(path):
            sys.exit("generate.py: font %s missing (scripts/setup.sh --bench-deps installs it)" % path)
        _font_cache[key] = ImageFont.truetype(path, int(px), index=index)
    return _font_cache[key]


def read_sections(name):
    sec, cur = {}, None
    with open(os.path.join(TEXTS, name), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#") and cur is None:
                continue
            if line.startswith("[") and line.endswith("]") and " " not in line:
                cur = line[1:-1]
                sec[cur] = []
            elif cur is not None and (line.strip() or name == "code.txt"):
                sec[cur].append(line)
    return sec


EN = read_sections("en_words.txt")
ZH = read_sections("zh_words.txt")
CODE = read_sections("code.txt")
ITEMS = []
with open(os.path.join(TEXTS, "items.tsv"), encoding="utf-8") as f:
    for line in f:
        if line.startswith("#") or line.startswith("en\t"):
            continue
        c = line.rstrip("\n").split("\t")
        if len(c) == 4:
            ITEMS.append((c[0], c[1], float(c[2]), float(c[3])))

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


# ---- text ---------------------------------------------------------------------------------------
class Words:
    def __init__(self, rng):
        self.r = rng

    def pick(self, table, sec, form=0):
        w = self.r.choice(table[sec])
        return w.split("|")[form] if "|" in w else w

    def date_en(self):
        y, m, d = self.r.randint(2019, 2026), self.r.randint(1, 12), self.r.randint(1, 28)
        k = self.r.randrange(3)
        return ("%d %s %d" % (d, MONTHS[m - 1], y), "%04d-%02d-%02d" % (y, m, d), "%02d/%02d/%04d" % (d, m, y))[k]

    def date_zh(self):
        return "%d年%d月%d日" % (self.r.randint(2019, 2026), self.r.randint(1, 12), self.r.randint(1, 28))

    def money(self, lo=10, hi=99999):
        v = self.r.uniform(lo, hi)
        return "{:,.2f}".format(v)

    def en_sentence(self):
        r, p = self.r, self.pick
        n = lambda: p(EN, "noun")
        ns = lambda: p(EN, "noun", 1)
        a = lambda: p(EN, "adjective")
        k = r.randrange(8)
        if k == 0:
            s = "The %s %s %s %s the %s %s the %s." % (a(), n(), p(EN, "adverb"), p(EN, "verb", 1), ns(),
                                                      p(EN, "preposition"), n())
        elif k == 1:
            s = "%s %s %d %s %s %s on %s." % (p(EN, "name"), p(EN, "verb", 2), r.randint(2, 999), ns(),
                                              p(EN, "preposition"), p(EN, "place"), self.date_en())
        elif k == 2:
            s = "All %s must %s a %s %s before %s." % (ns(), p(EN, "verb"), a(), n(), self.date_en())
        elif k == 3:
            s = "Please %s the %s %s and %s it to the %s." % (p(EN, "verb"), a(), n(), p(EN, "verb"), n())
        elif k == 4:
            s = "In %s %d, the %s %s $%s for %d %s." % (MONTHS[r.randrange(12)], r.randint(2015, 2026), n(),
                                                       p(EN, "verb", 2), self.money(), r.randint(2, 400), ns())
        elif k == 5:
            s = "Our %s %s %s %s the %s %s, as the %s %s." % (ns(), p(EN, "verb"), p(EN, "adverb"),
                                                            p(EN, "preposition"), a(), ns(), n(), p(EN, "verb", 2))
        elif k == 6:
            s = "The %s rose by %.1f%% to %s units, and %d %s were %s." % (n(), r.uniform(0.5, 40),
                                                                          "{:,}".format(r.randint(1000, 99999)),
                                                                          r.randint(2, 90), ns(), p(EN, "verb", 2))
        else:
            s = "See %s %d.%d of the %s %s (ref. %s-%d-%04d)." % (n(), r.randint(1, 12), r.randint(1, 9), a(), n(),
                                                                   r.choice(["INV", "PO", "REF", "DOC"]),
                                                                   r.randint(2019, 2026), r.randint(1, 9999))
        return s[0].upper() + s[1:]

    def zh_sentence(self, mixed=False):
        r, p = self.r, self.pick
        n = lambda: p(ZH, "noun")
        k = r.randrange(7)
        if k == 0:
            s = "%s，%s%s%s了%s%s的%s。" % (p(ZH, "time"), p(ZH, "person"), p(ZH, "adverb"), p(ZH, "verb"),
                                         p(ZH, "place"), n(), n())
        elif k == 1:
            s = "根据%s%s，本%s%s%s%d%s%s，%s为%s元。" % (n(), n(), n(), p(ZH, "adverb"), p(ZH, "verb"),
                                                    r.randint(2, 500), p(ZH, "measure"), n(), n(), self.money())
        elif k == 2:
            s = "%s%s于%s%s%s%s，共计%d%s。" % (p(ZH, "place"), n(), self.date_zh(), p(ZH, "verb"), p(ZH, "adjective"),
                                             n(), r.randint(2, 900), p(ZH, "measure"))
        elif k == 3:
            s = "请各%s%s%s%s，并%s%s%s。" % (n(), p(ZH, "adverb"), p(ZH, "verb"), n(), p(ZH, "verb"),
                                           p(ZH, "adjective"), n())
        elif k == 4:
            s = "本次%s的%s达到%.1f%%，比%s%s了%.1f%%。" % (n(), n(), r.uniform(1, 99), p(ZH, "time"),
                                                      r.choice(["提高", "增加", "减少", "下降"]), r.uniform(0.1, 20))
        elif k == 5:
            s = "%s的%s%s%s，%s%s%s。" % (p(ZH, "person"), n(), p(ZH, "adverb"), p(ZH, "verb"), n(), p(ZH, "adjective"),
                                        r.choice(["", "，需要再次确认", "，已经上报"]))
        else:
            s = "联系电话：%03d-%08d，地址：%s市%s路%d号。" % (r.randint(10, 999), r.randint(0, 99999999),
                                                      p(ZH, "place"), r.choice(["人民", "中山", "解放", "建设", "和平"]),
                                                      r.randint(1, 999))
        if mixed and r.random() < 0.6:
            term = r.choice(["CPU", "GPU", "API", "PDF", "USB", "Wi-Fi", "OCR", "ERP", "v%d.%d.%d" % (
                r.randint(1, 9), r.randint(0, 20), r.randint(0, 99)), "ISO 9001", "Email: %s@example.com" % r.choice(
                ["info", "sales", "admin", "hr"]), "No.%d" % r.randint(100, 99999)])
            cuts = [0] + [i + 1 for i, ch in enumerate(s[:-1]) if ch == "，"]  # at a clause's start
            cut = r.choice(cuts)
            s = s[:cut] + term + ("，" if cut == 0 else " ") + s[cut:]
        return s


# ---- layout -------------------------------------------------------------------------------------
class Page:
    def __init__(self, w, h, bg):
        self.img = Image.new("RGB", (w, h), bg)
        self.d = ImageDraw.Draw(self.img)
        self.segments = []  # (quad, text)

    def text(self, x, y, s, f, fill):
        s = s.strip()
        if not s:
            return 0
        self.d.text((x, y), s, font=f, fill=fill)
        l, t, r, b = self.d.textbbox((x, y), s, font=f)
        self.segments.append(([(l, t), (r, t), (r, b), (l, b)], s))
        return r - x

    def text_right(self, xr, y, s, f, fill):
        return self.text(xr - f.getlength(s.strip()), y, s, f, fill)

    def text_center(self, xc, y, s, f, fill):
        return self.text(xc - f.getlength(s.strip()) / 2, y, s, f, fill)


def wrap(s, f, width, cjk):
    """Lines of s no wider than width: at spaces for Latin text; for CJK text after any character
    but inside no run of Latin letters and digits."""
    out = []
    if cjk:
        cur = ""
        for ch in re.findall(r"[A-Za-z0-9_.,%@:/+\-]+|.", s):
            if f.getlength(cur + ch) > width and cur:
                out.append(cur)
                cur = ch.lstrip()
            else:
                cur += ch
        if cur.strip():
            out.append(cur)
        return out
    cur = ""
    for w in s.split(" "):
        t = (cur + " " + w) if cur else w
        if f.getlength(t) > width and cur:
            out.append(cur)
            cur = w
        else:
            cur = t
    if cur:
        out.append(cur)
    return out


def ink(rng, dark=True):
    v = rng.randint(10, 60)
    return (v, v, v) if dark else (rng.randint(200, 240),) * 3


# ---- page kinds ---------------------------------------------------------------------------------
def a4(rng, lang):
    dpi = rng.choice([150, 150, 150, 200, 200, 300])
    W, H = {150: (1240, 1754), 200: (1654, 2339), 300: (2480, 3508)}[dpi]
    tone = rng.randint(238, 255)
    pg = Page(W, H, (tone, tone, max(tone - rng.randint(0, 8), 225)))
    wr = Words(rng)
    cjk = lang in ("zh", "mixed")
    body = rng.choice(ZH_BODY if cjk else EN_BODY)
    pt = rng.choice([10, 10.5, 11, 12, 12, 14])
    px = pt * dpi / 72
    f = font(body, px)
    fh = font(body if cjk else EN_BOLD[body], px * rng.choice([1.4, 1.6, 1.8]))
    fs = font(body, px * 0.85)
    col = ink(rng)
    m = int(dpi * rng.uniform(0.75, 1.0))
    x0, x1, y = m, W - m, m
    lead = px * rng.choice([1.35, 1.5, 1.7])
    max_lines = rng.randint(18, 45)
    # title and a reference line
    if cjk:
        title = "关于%s%s%s的%s" % (wr.pick(ZH, "place"), wr.pick(ZH, "noun"), wr.pick(ZH, "noun"),
                                  rng.choice(["通知", "报告", "说明", "会议纪要", "工作总结"]))
        ref = "文件编号：%s-%d-%03d    日期：%s" % (rng.choice(["BG", "TZ", "HY"]), rng.randint(2019, 2026),
                                             rng.randint(1, 999), wr.date_zh())
    else:
        title = "%s %s %s" % (wr.pick(EN, "adjective").title(), wr.pick(EN, "noun").title(),
                              rng.choice(["Report", "Notice", "Summary", "Agreement", "Minutes"]))
        ref = "Ref. %s-%d-%04d    Date: %s" % (rng.choice(["RPT", "AGR", "MIN"]), rng.randint(2019, 2026),
                                              rng.randint(1, 9999), wr.date_en())
    pg.text_center(W / 2, y, title, fh, col)
    y += fh.size * 1.8
    left, right = ref.split("    ")
    pg.text(x0, y, left, fs, col)
    pg.text_right(x1, y, right, fs, col)
    y += lead * 1.6
    n = 2
    while n < max_lines and y + lead < H - m - lead * 2:
        kind = rng.random()
        if kind < 0.12 and n > 4:  # a heading
            y += lead * 0.5
            h = ("%d. " % rng.randint(1, 9)) + (("%s%s" % (wr.pick(ZH, "noun"), wr.pick(ZH, "noun"))) if cjk else (
                "%s %s" % (wr.pick(EN, "adjective"), wr.pick(EN, "noun", 1))).title())
            pg.text(x0, y, h, font(body if cjk else EN_BOLD[body], px * 1.15), col)
            y += lead * 1.3
            n += 1
            continue
        if kind < 0.2 and n > 4:  # a small two-column table
            for _ in range(rng.randint(3, 6)):
                if y + lead >= H - m - lead * 2 or n >= max_lines:
                    break
                key = (wr.pick(ZH, "noun") + wr.pick(ZH, "noun")) if cjk else wr.pick(EN, "noun").title()
                val = rng.choice([wr.money(10, 9999), str(rng.randint(1, 5000)), wr.date_zh() if cjk else wr.date_en(),
                                  "%.1f%%" % rng.uniform(0, 100)])
                pg.text(x0 + px * 2, y, key, f, col)
                pg.text_right(x1 - px * 2, y, val, f, col)
                y += lead
                n += 1
            y += lead * 0.5
            continue
        para = "".join(wr.zh_sentence(lang == "mixed") for _ in range(rng.randint(2, 5))) if cjk else " ".join(
            wr.en_sentence() for _ in range(rng.randint(2, 5)))
        indent = px * 2 if rng.random() < 0.5 else 0
        lines = wrap(para, f, x1 - x0 - indent, cjk)
        for i, ln in enumerate(lines):
            if y + lead >= H - m - lead * 2 or n >= max_lines:
                break
            pg.text(x0 + (indent if i == 0 else 0), y, ln, f, col)
            y += lead
            n += 1
        y += lead * 0.4
    foot = ("第 %d 页 共 %d 页" if cjk else "Page %d of %d") % (rng.randint(1, 3), rng.randint(3, 9))
    pg.text_center(W / 2, H - m * 0.7, foot, fs, col)
    return pg, dict(dpi=dpi, font=body, size="%gpt" % pt), True


def receipt(rng, lang):
    W = rng.choice([576, 600, 640])
    zh = lang == "zh"
    fn = rng.choice(ZH_MONO if zh else EN_MONO)
    px = rng.choice([20, 22, 24, 26])
    f, fb = font(fn, px), font(fn, px * 1.5)
    wr = Words(rng)
    col = ink(rng)
    lead = px * 1.45
    m = rng.randint(24, 40)
    rows = []  # (kind, args)
    store = ("%s%s超市" % (wr.pick(ZH, "place"), rng.choice(["万家", "惠民", "新华", "百佳", "好又多"]))) if zh else (
        "%s %s Store" % (wr.pick(EN, "place"), rng.choice(["Fresh", "Corner", "Value", "Central", "Family"])))
    rows.append(("center_big", store))
    rows.append(("center", ("地址：%s路%d号" % (rng.choice(["人民", "中山", "解放", "建设"]), rng.randint(1, 999))) if zh else
                 "%d %s Road, %s" % (rng.randint(1, 300), wr.pick(EN, "name"), wr.pick(EN, "place"))))
    rows.append(("center", ("电话：0%d-%08d" if zh else "Tel: 0%d %08d") % (rng.randint(10, 99), rng.randint(0, 99999999))))
    rows.append(("rule", None))
    d = "%04d-%02d-%02d %02d:%02d:%02d" % (rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28),
                                           rng.randint(7, 22), rng.randint(0, 59), rng.randint(0, 59))
    rows.append(("pair", ("日期：" if zh else "Date: ") + d.split(" ")[0], d.split(" ")[1]))
    rows.append(("pair", ("单号：" if zh else "Receipt: ") + "%d" % rng.randint(100000, 999999),
                 ("收银员：%03d" if zh else "Cashier: %03d") % rng.randint(1, 120)))
    rows.append(("rule", None))
    total = 0.0
    for it in rng.sample(ITEMS, rng.randint(5, 14)):
        q = rng.choice([1, 1, 1, 2, 3])
        unit = round(rng.uniform(it[2], it[3]), 1)
        amt = q * unit
        total += amt
        rows.append(("pair", it[1] if zh else it[0], "%.2f" % amt))
        if q > 1:
            rows.append(("indent", "%d x %.2f" % (q, unit)))
    rows.append(("rule", None))
    rows.append(("pair", "合计" if zh else "TOTAL", "%.2f" % total))
    paid = math.ceil(total / 50) * 50 if rng.random() < 0.6 else total
    rows.append(("pair", ("现金" if zh else "Cash") if paid != total else ("微信支付" if zh else "Card"), "%.2f" % paid))
    rows.append(("pair", "找零" if zh else "Change", "%.2f" % (paid - total)))
    rows.append(("rule", None))
    rows.append(("center", "谢谢惠顾，欢迎再次光临" if zh else "Thank you for shopping with us"))
    H = int(m * 2 + sum(lead * (1.8 if k == "center_big" else 0.8 if k == "rule" else 1) for k, *_ in rows))
    H = max(H, 1000)
    tone = rng.randint(240, 255)
    pg = Page(W, H, (tone, tone, tone))
    y = m
    for k, *a in rows:
        if k == "center_big":
            pg.text_center(W / 2, y, a[0], fb, col)
            y += lead * 1.8
        elif k == "center":
            pg.text_center(W / 2, y, a[0], f, col)
            y += lead
        elif k == "rule":
            yy = int(y + lead * 0.3)
            pg.d.line([(m, yy), (W - m, yy)], fill=col, width=2)
            y += lead * 0.8
        elif k == "pair":
            pg.text(m, y, a[0], f, col)
            pg.text_right(W - m, y, a[1], f, col)
            y += lead
        elif k == "indent":
            pg.text(m + px * 2, y, a[0], f, col)
            y += lead
    return pg, dict(dpi=0, font=fn, size="%dpx" % px), True


SCREEN_SIZES = [(1920, 1080), (1366, 768), (1280, 800), (1440, 900), (600, 1200), (720, 1280), (1240, 1754)]


def screen_code(rng):
    W, H = rng.choice(SCREEN_SIZES)
    dark = rng.random() < 0.5
    bg, fg, dim = ((30, 30, 30), (212, 212, 212), (133, 133, 133)) if dark else ((255, 255, 255), (36, 36, 36),
                                                                                  (140, 140, 140))
    pg = Page(W, H, bg)
    px = rng.choice([14, 15, 16, 18]) * (1.5 if W < 800 else 1)
    fn = rng.choice(EN_MONO)
    f, fu = font(fn, px), font(rng.choice(["dejavu-sans", "liberation-sans"]), px * 0.95)
    bar = int(px * 2.2)
    pg.d.rectangle([0, 0, W, bar], fill=(60, 60, 60) if dark else (235, 235, 235))
    name = rng.choice(sorted(CODE))
    pg.text(int(px), int(bar * 0.25), "%s - editor" % name, fu, fg)
    lead = px * rng.choice([1.4, 1.5, 1.6])
    y, ln = bar + px, 1
    gutter = px * 3.5
    names = sorted(CODE)
    lines = [ln for k in range(len(names)) for ln in CODE[names[(names.index(name) + k) % len(names)]]]
    k = 0
    while y + lead < H - bar * 1.5:
        s = lines[k % len(lines)]
        k += 1
        pg.text_right(gutter - px * 0.8, y, str(ln), f, dim)
        if s.strip():
            lead_sp = len(s) - len(s.lstrip(" "))
            pg.text(gutter + px * 0.6 + f.getlength(" " * lead_sp), y, s, f, fg)
        y += lead
        ln += 1
    pg.d.rectangle([0, H - bar, W, H], fill=(0, 122, 204) if dark else (230, 230, 230))
    pg.text(int(px), H - bar + int(bar * 0.25), "Ln %d, Col %d" % (rng.randint(1, ln), rng.randint(1, 80)), fu,
            (255, 255, 255) if dark else fg)
    pg.text_right(W - px, H - bar + int(bar * 0.25), "UTF-8 LF %s" % name.split(".")[-1].upper(), fu,
                  (255, 255, 255) if dark else fg)
    return pg, dict(dpi=0, font=fn, size="%dpx" % px), False


def screen_ui(rng):
    W, H = rng.choice(SCREEN_SIZES)
    wr = Words(rng)
    zh = rng.random() < 0.5
    fn = rng.choice(ZH_BODY[:2]) if zh else rng.choice(["dejavu-sans", "liberation-sans"])
    px = rng.choice([15, 16, 18]) * (1.4 if W < 800 else 1)
    f, fb = font(fn, px), font(fn if zh else fn + "-bold", px * 1.3)
    pg = Page(W, H, (248, 249, 251))
    fg, dim = (33, 37, 41), (108, 117, 125)
    side = 0 if W < 800 else int(W * 0.18)
    if side:
        pg.d.rectangle([0, 0, side, H], fill=(38, 50, 70))
        y = px * 2
        for it in (["首页", "订单", "客户", "库存", "报表", "设置"] if zh else
                   ["Home", "Orders", "Customers", "Inventory", "Reports", "Settings"]):
            pg.text(px * 1.5, y, it, f, (230, 235, 240))
            y += px * 2.6
    x0 = side + px * 2
    y = px * 2
    pg.text(x0, y, ("%s%s列表" % (wr.pick(ZH, "noun"), wr.pick(ZH, "noun"))) if zh else
            ("%s %s" % (wr.pick(EN, "adjective"), wr.pick(EN, "noun", 1))).title(), fb, fg)
    y += px * 3
    cols = ["日期", "名称", "金额", "状态"] if zh else ["Date", "Name", "Amount", "Status"]
    cw = (W - x0 - px * 2) / 4
    for i, c in enumerate(cols):
        pg.text(x0 + i * cw, y, c, fb if W >= 800 else f, dim)
    y += px * 2.2
    while y + px * 2.4 < H - px * 2:
        pg.d.line([(x0, y - px * 0.5), (W - px * 2, y - px * 0.5)], fill=(222, 226, 230), width=1)
        date = "%04d-%02d-%02d" % (rng.randint(2020, 2026), rng.randint(1, 12), rng.randint(1, 28))
        name = (wr.pick(ZH, "noun") + wr.pick(ZH, "noun")) if zh else wr.pick(EN, "noun").title() + " " + str(
            rng.randint(10, 999))
        if W < 800:
            name = name[:8]
        amt = wr.money(1, 99999 if W >= 800 else 9999)
        st = rng.choice(["已完成", "处理中", "待审核", "已取消"] if zh else ["Paid", "Pending", "Open", "Closed"])
        for i, v in enumerate([date, name, amt, st]):
            pg.text(x0 + i * cw, y, v, f, fg)
        y += px * 2.4
    return pg, dict(dpi=0, font=fn, size="%dpx" % px), False


def screen_chat(rng):
    W, H = rng.choice(SCREEN_SIZES)
    wr = Words(rng)
    fn = rng.choice(ZH_BODY[:2])
    px = rng.choice([16, 18, 20]) * (1.4 if W < 800 else 1)
    f, fs = font(fn, px), font(fn, px * 0.8)
    pg = Page(W, H, (237, 237, 237))
    top = int(px * 3)
    pg.d.rectangle([0, 0, W, top], fill=(247, 247, 247))
    pg.text_center(W / 2, px * 0.9, rng.choice(["项目讨论组", "Project team", "客户服务", "Weekly sync"]), f, (20, 20, 20))
    y = top + px
    maxw = W * 0.62
    while True:
        me = rng.random() < 0.45
        msg = wr.zh_sentence(mixed=True) if rng.random() < 0.6 else wr.en_sentence()
        lines = wrap(msg, f, maxw - px * 2, any(ord(c) > 0x2e80 for c in msg))[:3]
        h = len(lines) * px * 1.45 + px * 1.2
        if y + h + px * 2.5 > H - px:
            break
        t = "%02d:%02d" % (rng.randint(8, 22), rng.randint(0, 59))
        pg.text_center(W / 2, y, t, fs, (150, 150, 150))
        y += px * 1.6
        bw = max(f.getlength(ln) for ln in lines) + px * 1.6
        bx = W - px * 2 - bw if me else px * 2
        pg.d.rounded_rectangle([bx, y, bx + bw, y + h], radius=int(px * 0.4),
                               fill=(149, 236, 105) if me else (255, 255, 255))
        yy = y + px * 0.6
        for ln in lines:
            pg.text(bx + px * 0.8, yy, ln, f, (25, 25, 25))
            yy += px * 1.45
        y += h + px
    return pg, dict(dpi=0, font=fn, size="%dpx" % px), False


# ---- scan look and rotation ---------------------------------------------------------------------
def rotate(pg, angle, bg):
    """Turns the page by `angle` degrees counter-clockwise about its centre (the size stays) and the
    segments' quads with it."""
    W, H = pg.img.size
    pg.img = pg.img.rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=bg)
    a = math.radians(angle)
    c, s = math.cos(a), math.sin(a)
    cx, cy = W / 2, H / 2
    out = []
    for quad, text in pg.segments:
        # image y points down: a visual counter-clockwise turn maps (dx, dy) to (dx c + dy s, -dx s + dy c)
        out.append(([(cx + (x - cx) * c + (y - cy) * s, cy - (x - cx) * s + (y - cy) * c) for x, y in quad], text))
    pg.segments = out


def scan_look(pg, rng):
    if rng.random() < 0.7:
        pg.img = pg.img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.8)))
    W, H = pg.img.size
    noise = Image.effect_noise((W, H), rng.uniform(8, 20)).convert("RGB")
    pg.img = Image.blend(pg.img, noise, rng.uniform(0.04, 0.08))


def make_page(seed, i, kind):
    rng = random.Random("%d:%d:%s" % (seed, i, kind))
    if kind.startswith("a4_"):
        pg, meta, scan = a4(rng, kind[3:])
    elif kind.startswith("receipt_"):
        pg, meta, scan = receipt(rng, kind[8:])
    elif kind == "screen_code":
        pg, meta, scan = screen_code(rng)
    elif kind == "screen_ui":
        pg, meta, scan = screen_ui(rng)
    elif kind == "screen_chat":
        pg, meta, scan = screen_chat(rng)
    else:
        raise SystemExit("generate.py: unknown kind " + kind)
    angle = 0.0
    if scan:
        if rng.random() < 0.25:
            angle = round(rng.choice([-1, 1]) * rng.uniform(0.5, 3.0), 2)
            bg = pg.img.getpixel((2, 2))
            rotate(pg, angle, bg)
        scan_look(pg, rng)
    meta["angle"] = angle
    return pg, meta, scan


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "build", "documents"))
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    os.makedirs(os.path.join(a.out, "pages"), exist_ok=True)
    gt = ["image_path\tunit\tbox\ttext\tsource\tnote"]
    man = ["file\tkind\twidth\theight\tdpi\tfont\tsize\tangle\tlines"]
    for i in range(a.pages):
        kind = PLAN[i % len(PLAN)]
        if only and kind not in only:
            continue
        pg, meta, scan = make_page(a.seed, i, kind)
        W, H = pg.img.size
        name = "pages/%03d_%s.%s" % (i, kind, "jpg" if scan else "png")
        path = os.path.join(a.out, name)
        if scan:
            pg.img.save(path, quality=random.Random("q%d:%d" % (a.seed, i)).randint(80, 92))
        else:
            pg.img.save(path, optimize=True)
        note = "%s %dx%d font %s %s%s" % (kind, W, H, meta["font"], meta["size"],
                                          " dpi %d" % meta["dpi"] if meta["dpi"] else "") + (
            " rotated %+.2f deg" % meta["angle"] if meta["angle"] else "")
        for quad, text in pg.segments:
            box = ",".join("%d" % round(v) for p in quad for v in (min(max(p[0], 0), W - 1), min(max(p[1], 0), H - 1)))
            gt.append("%s\tline\t%s\t%s\tbench/documents/generate.py seed %d (rendered text)\t%s" % (
                name, box, text.replace("\\", "\\\\").replace("\t", "\\t"), a.seed, note))
        man.append("%s\t%s\t%d\t%d\t%d\t%s\t%s\t%g\t%d" % (name, kind, W, H, meta["dpi"], meta["font"], meta["size"],
                                                           meta["angle"], len(pg.segments)))
    with open(os.path.join(a.out, "gt.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(gt) + "\n")
    with open(os.path.join(a.out, "pages.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(man) + "\n")
    print("generate.py: %d pages, %d lines in %s" % (len(man) - 1, len(gt) - 1, os.path.abspath(a.out)))


if __name__ == "__main__":
    main()
