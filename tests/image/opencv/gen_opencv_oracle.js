// Regenerates the OpenCV oracle files of this folder (committed; CI does not
// run this). Needs the npm package @techstark/opencv-js (OpenCV 4.5 built for
// JavaScript; its 8-bit INTER_LINEAR and INTER_CUBIC code is the C++ code):
//   mkdir /tmp/cvjs && cd /tmp/cvjs && npm install @techstark/opencv-js --ignore-scripts
//   NODE_PATH=/tmp/cvjs/node_modules node gen_opencv_oracle.js
// Writes <case>.in (source BGR bytes), <case>.out (OpenCV's result) and
// manifest.txt: "R id sw sh dw dh" for cv.resize(INTER_LINEAR) and
// "W id sw sh w h x0 y0 ... x3 y3" for PaddleOCR's get_rotate_crop_image:
// getPerspectiveTransform(float32 quad -> (0,0),(w,0),(w,h),(0,h)) and
// warpPerspective(INTER_CUBIC, BORDER_REPLICATE), w/h = int(max side norms).
const fs = require('fs');
const cvp = require('@techstark/opencv-js');
function run(cv) {
  let seed = 7;
  const rnd = () => { seed = (seed * 1103515245 + 12345) >>> 0; return (seed >>> 16) & 255; };
  const man = [];
  const mk = (w, h, smooth) => {
    const m = new cv.Mat(h, w, cv.CV_8UC3);
    for (let i = 0; i < w * h * 3; i++) m.data[i] = smooth ? ((i * 7 + ((i / (w * 3)) | 0) * 13) & 255) : rnd();
    return m;
  };
  const rs = [[3,5,2,7],[4,4,5,3],[7,9,5,13],[2,2,3,3],[9,3,6,11],[100,48,48,48],[5,7,160,48],
              [50,30,100,60],[150,40,75,21],[64,64,96,32],[33,1,17,3],[160,120,61,39],[37,23,96,54]];
  rs.forEach((r, i) => {
    const s = mk(r[0], r[1], i % 2), d = new cv.Mat();
    cv.resize(s, d, new cv.Size(r[2], r[3]), 0, 0, cv.INTER_LINEAR);
    fs.writeFileSync(`r${i}.in`, Buffer.from(s.data));
    fs.writeFileSync(`r${i}.out`, Buffer.from(d.data));
    man.push(`R ${i} ${r.join(' ')}`);
    s.delete(); d.delete();
  });
  const quads = [[[6.5,12.25],[110.7,9.1],[114.2,72.9],[3.3,78.4]], [[30,6],[90,36],[66,84],[6,54]],
                 [[-20.5,-10],[60.25,-5],[70,40.5],[-15,30]], [[60.3,12.7],[119.9,12.7],[119.9,89.9],[60.3,89.9]],
                 [[10,80],[10,5],[40,5],[40,80]]];
  quads.forEach((q, i) => {
    const s = mk(120, 90, i % 2);
    const f = new Float32Array(q.flat());
    const P = k => [f[2 * k], f[2 * k + 1]];
    const n = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1]);
    const w = Math.trunc(Math.max(n(P(0), P(1)), n(P(2), P(3))));
    const h = Math.trunc(Math.max(n(P(0), P(3)), n(P(1), P(2))));
    const src = cv.matFromArray(4, 1, cv.CV_32FC2, Array.from(f));
    const dst = cv.matFromArray(4, 1, cv.CV_32FC2, [0, 0, w, 0, w, h, 0, h]);
    const M = cv.getPerspectiveTransform(src, dst), d = new cv.Mat();
    cv.warpPerspective(s, d, M, new cv.Size(w, h), cv.INTER_CUBIC, cv.BORDER_REPLICATE, new cv.Scalar());
    fs.writeFileSync(`w${i}.in`, Buffer.from(s.data));
    fs.writeFileSync(`w${i}.out`, Buffer.from(d.data));
    man.push(`W ${i} 120 90 ${w} ${h} ${Array.from(f).join(' ')}`);
    s.delete(); d.delete(); M.delete(); src.delete(); dst.delete();
  });
  fs.writeFileSync('manifest.txt', man.join('\n') + '\n');
}
(async () => {
  let cv = cvp;
  if (cv instanceof Promise) cv = await cv;
  else if (!cv.Mat) await new Promise(r => { cv.onRuntimeInitialized = r; });
  run(cv);
})();
