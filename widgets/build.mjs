/**
 * Bundle each widget's front end into tensorkit/notebook/static (or into the directory given
 * as the first argument): graph.js, stepper.js, profile.js, replay.js and widgets.css, and the
 * recorded view (recording_view.js) as a minified plain script defining
 * `tensorkitRecordingView`, which the outputs' text/html fallback inlines. Each
 * bundle starts with a header naming the esbuild version and a SHA-256 of widgets/src, which
 * widgets/check_bundle.py compares when node is not available. elkjs's licence (EPL-2.0) is
 * copied beside the bundles, which include it.
 *
 * Run: npm --prefix widgets run build
 */

import { createHash } from "node:crypto";
import { copyFileSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const src = join(here, "src");

/**
 * SHA-256 over the files under `dir`, sorted by path relative to it: for each, the path
 * (with "/" separators), a NUL byte, the content, a NUL byte. check_bundle.py computes the
 * same digest.
 * @param {string} dir
 * @returns {string}
 */
function sourceHash(dir) {
  const files = [];
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(relative(dir, path).split(sep).join("/"));
    }
  };
  walk(dir);
  files.sort();
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(file, "utf8");
    hash.update("\0");
    hash.update(readFileSync(join(dir, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const outdir = resolve(process.argv[2] || join(root, "tensorkit", "notebook", "static"));
const header =
  `/* tensorkit widgets bundle: esbuild ${esbuild.version}, ` +
  `widgets/src sha256=${sourceHash(src)} */`;
await esbuild.build({
  absWorkingDir: root,
  entryPoints: [
    "widgets/src/graph.js",
    "widgets/src/stepper.js",
    "widgets/src/profile.js",
    "widgets/src/replay.js",
    "widgets/src/widgets.css",
  ],
  bundle: true,
  format: "esm",
  target: "es2020",
  outdir,
  banner: { js: header, css: header },
  // ELK alone is 1.6 MB as shipped. Names are kept: recording.py inlines a bundle by its
  // default export's name (graph_default), which must end the file.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "inline",
  logLevel: "warning",
});
await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["widgets/src/recording_view.js"],
  bundle: true,
  format: "iife",
  globalName: "tensorkitRecordingView",
  minify: true,
  target: "es2020",
  outfile: join(outdir, "recording_view.js"),
  banner: { js: header },
  logLevel: "warning",
});
// The bundles include elkjs (EPL-2.0): its licence ships beside them.
copyFileSync(join(here, "node_modules", "elkjs", "LICENSE.md"), join(outdir, "elkjs-LICENSE.md"));
