// Validates the Kubernetes manifests of deploy/k8s/ and the YAML blocks of
// the docs offline, twice: against the JSON schemas that the npm package
// kubernetes-models generates from Kubernetes' published OpenAPI document
// (types, enums, required fields, formats), and strictly, as kubeconform
// -strict does: every field must exist in the schema (the package's
// TypeScript interfaces of the same document, checked by the TypeScript
// compiler's excess-property rule, so a misspelt field fails). Then checks the
// contracts between the manifests and lector, and that each manifest shown in
// docs/SCALE.md is the file in deploy/ byte for byte.
//   node validate_manifests.js SOURCE_DIR
"use strict";
const childProcess = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const YAML = require("yaml");

const top = process.argv[2];
let passed = 0, failed = 0;
const ok = () => passed++;
const ko = (m) => { failed++; console.log("FAIL: " + m); };

function model(apiVersion, kind) {
  const dir = apiVersion.includes("/") ? apiVersion : apiVersion; // "apps/v1", "v1"
  try {
    const mod = require("kubernetes-models/" + dir + "/" + kind);
    return mod[kind];
  } catch (e) {
    return null;
  }
}

// Returns the validation error's message, or null when the object is valid.
function check(obj) {
  if (!obj || typeof obj !== "object" || !obj.apiVersion || !obj.kind) return "no apiVersion/kind";
  const M = model(obj.apiVersion, obj.kind);
  if (!M) return "unknown apiVersion/kind " + obj.apiVersion + "/" + obj.kind;
  try {
    new M(obj).validate();
    return null;
  } catch (e) {
    return e.message;
  }
}

function docs(text, where) {
  const out = [];
  for (const d of YAML.parseAllDocuments(text)) {
    if (d.errors.length) { ko(where + ": YAML: " + d.errors[0].message); continue; }
    const o = d.toJSON();
    if (o !== null) out.push(o);
  }
  return out;
}

// Strict check of many objects in one compiler run: returns, per object, the
// compiler's first error about it, or null.
function strict(objs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lector-k8s-"));
  const lines = ["export {};"];
  objs.forEach((o, i) => {
    const group = o.apiVersion;
    lines.push("import type { I" + o.kind + " as T" + i + ' } from "kubernetes-models/' + group + "/" + o.kind + '";');
  });
  const first = lines.length + 1; // 1-based line of object 0
  objs.forEach((o, i) => lines.push("const o" + i + ": T" + i + " = " + JSON.stringify(o) + "; void o" + i + ";"));
  const file = path.join(dir, "manifests.ts");
  fs.writeFileSync(file, lines.join("\n") + "\n");
  // tsconfig: the package's modules resolved from this directory's node_modules
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: { noEmit: true, strict: true, skipLibCheck: true, module: "commonjs", moduleResolution: "node",
      target: "es2020", types: [], baseUrl: path.join(__dirname, "node_modules"), paths: { "*": ["*"] } },
    files: [file],
  }));
  const tsc = require.resolve("typescript/bin/tsc");
  const r = childProcess.spawnSync(process.execPath, [tsc, "-p", dir], { encoding: "utf8" });
  fs.rmSync(dir, { recursive: true, force: true });
  const errs = objs.map(() => null);
  const other = [];
  for (const l of (r.stdout + r.stderr).split("\n")) {
    const m = /manifests\.ts\((\d+),\d+\): (error .*)/.exec(l);
    if (m && Number(m[1]) >= first && Number(m[1]) < first + objs.length) {
      const i = Number(m[1]) - first;
      if (!errs[i]) errs[i] = m[2];
    } else if (l.trim()) other.push(l);
  }
  if (r.status !== 0 && errs.every((e) => !e)) throw new Error("tsc failed: " + other.join("\n"));
  if (other.length) throw new Error("tsc: " + other.join("\n"));
  return errs;
}

// the validator is live: broken copies are refused
const job = docs(fs.readFileSync(path.join(top, "deploy/k8s/lector-batch-job.yaml"), "utf8"), "job")[0];
const broken = [
  (j) => { j.spec.completionMode = "Indexd"; },
  (j) => { j.spec.completions = "eight"; },
  (j) => { delete j.spec.template.spec.containers[0].name; },
  (j) => { j.spec.template.spec.containers[0].env[0].value = 8; },
];
for (const b of broken) {
  const j = JSON.parse(JSON.stringify(job));
  b(j);
  check(j) ? ok() : ko("a broken Job passed validation: " + b.toString());
}

// and misspelt fields too, in the strict check
const typos = [
  (j) => { j.spec.complettions = 8; },
  (j) => { j.spec.template.spec.containers[0].resource = {}; },
  (j) => { j.spec.podFailurePolicy.rules[0].onPodCondition = j.spec.podFailurePolicy.rules[0].onPodConditions; },
];
const typoObjs = typos.map((t) => { const j = JSON.parse(JSON.stringify(job)); t(j); return j; });
const typoErrs = strict([job, ...typoObjs]);
typoErrs[0] === null ? ok() : ko("the Job itself fails the strict check: " + typoErrs[0]);
typoErrs.slice(1).forEach((e, i) => (e ? ok() : ko("a misspelt field passed the strict check: " + typos[i].toString())));

// every manifest in deploy/k8s and every YAML block of the docs
const files = fs.readdirSync(path.join(top, "deploy/k8s")).filter((f) => f.endsWith(".yaml"));
const objects = [];
for (const f of files) {
  for (const o of docs(fs.readFileSync(path.join(top, "deploy/k8s", f), "utf8"), f)) objects.push([f, o]);
}
const fence = /```(yaml|bash)\n([\s\S]*?)```/g;
for (const md of ["docs/SCALE.md", "docs/SERVICE.md"]) {
  const text = fs.readFileSync(path.join(top, md), "utf8");
  for (const m of text.matchAll(fence)) {
    if (m[1] === "yaml") for (const o of docs(m[2], md)) objects.push([md, o]);
  }
}
for (const [where, o] of objects) {
  const err = check(o);
  err ? ko(where + ": " + o.kind + " " + (o.metadata || {}).name + ": " + err) : ok();
}
const strictErrs = strict(objects.map(([, o]) => o));
objects.forEach(([where, o], i) => {
  const e = strictErrs[i];
  e ? ko(where + ": " + o.kind + " " + (o.metadata || {}).name + " (strict): " + e) : ok();
});
const kinds = objects.map(([, o]) => o.kind);
for (const k of ["Job", "HorizontalPodAutoscaler", "Deployment", "Service", "ConfigMap"])
  kinds.includes(k) ? ok() : ko("no " + k + " among the manifests checked");

// contracts with lector
const spec = job.spec;
const env = Object.fromEntries(spec.template.spec.containers[0].env.map((e) => [e.name, e.value]));
spec.completionMode === "Indexed" ? ok() : ko("the Job is not Indexed");
Number(env.LECTOR_SHARD_COUNT) === spec.completions ? ok() : ko("LECTOR_SHARD_COUNT is not the Job's completions");
/--resume/.test(spec.template.spec.containers[0].args.join(" ")) ? ok() : ko("the Job does not --resume");
const serveDir = path.join(top, "src/serve");
const metrics = fs.readdirSync(serveDir).filter((f) => f.endsWith(".c"))
  .map((f) => fs.readFileSync(path.join(serveDir, f), "utf8")).join("\n");
for (const [where, o] of objects) {
  if (o.kind !== "HorizontalPodAutoscaler") continue;
  o.spec.scaleTargetRef.name === "lector" ? ok() : ko(where + ": the HPA does not scale the Deployment lector");
  for (const m of o.spec.metrics) {
    const name = m.pods && m.pods.metric.name;
    // a gauge: an average over pods of a counter would mean nothing
    name && metrics.includes("# TYPE " + name + " gauge") ? ok() : ko(where + ": the HPA's metric is not a gauge /metrics serves: " + name);
  }
}

// each manifest shown in docs/SCALE.md is its file in deploy/, byte for byte
const scale = fs.readFileSync(path.join(top, "docs/SCALE.md"), "utf8");
const blocks = [...scale.matchAll(fence)].map((m) => m[2]);
for (const f of ["deploy/k8s/lector-batch-job.yaml", "deploy/k8s/lector-serve-hpa.yaml", "deploy/slurm/lector-array.sbatch"]) {
  blocks.includes(fs.readFileSync(path.join(top, f), "utf8")) ? ok() : ko("docs/SCALE.md does not show " + f + " as it is");
}

console.log(passed + " passed, " + failed + " failed");
process.exit(failed ? 1 : 0);
