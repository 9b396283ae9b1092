/**
 * The canvas painter: a scene (scene.js) drawn on a 2-D canvas, for scenes too large for
 * SVG. Only what meets the view is drawn (culling); zoomed out, texts and then arrowheads
 * are left out (level of detail), and boxes and lines of one style go in one path each.
 * Colours, strokes and fonts are read from widgets.css through hidden SVG elements with
 * the same class names as the SVG painter's, so both painters follow the same styles
 * (and JupyterLab's themes).
 */

import { s } from "./dom.js";
import { clip, cornerRadius } from "./paint_svg.js";
import { visibleItems } from "./scene.js";

/** Below these zoom levels texts, then arrowheads, are not drawn. */
export const LOD = { text: 0.4, arrows: 0.2 };

/** Largest image (in device pixels) the whole scene is drawn into, to pan it as one;
 * larger scenes are drawn in tiles of TILE x TILE views around the view. */
export const SNAPSHOT_PIXELS = 16e6;
const TILE = 3;

/**
 * A painter drawing scenes on `canvas`; `host` receives the hidden style probes.
 * @param {HTMLCanvasElement} canvas
 * @param {HTMLElement} host
 * @returns {{draw: (scene: object, view: {k: number, x: number, y: number}) => number,
 *   destroy: () => void}} draw returns the number of node boxes drawn
 */
export function canvasPainter(canvas, host) {
  const probe = s("svg", { class: "tk-style-probe", width: 1, height: 1, "aria-hidden": "true" });
  host.append(probe);
  const styles = new Map();
  const styleOf = (tag, classes, inner = null) => {
    const key = `${tag}|${classes}|${inner ? `${inner.tag}.${inner.class || ""}` : ""}`;
    if (styles.has(key)) return styles.get(key);
    const element = s(tag, { class: classes });
    const target = inner ? s(inner.tag, { class: inner.class }) : element;
    if (inner) element.append(target);
    probe.append(element);
    const css = getComputedStyle(target);
    const style = {
      fill: css.fill,
      stroke: css.stroke,
      width: parseFloat(css.strokeWidth) || 1,
      dash: css.strokeDasharray === "none" ? [] : css.strokeDasharray.split(/[ ,]+/).map(parseFloat),
      alpha: parseFloat(getComputedStyle(element).opacity) || 1,
      font: `${css.fontWeight} ${css.fontSize} ${css.fontFamily}`,
    };
    element.remove();
    styles.set(key, style);
    return style;
  };
  const screen = canvas.getContext("2d");
  let ctx = screen;
  let snapshot = null; // {scene, k, part, image, count}: part of the scene drawn at zoom k

  /** Draw `scene` under `view`; returns the number of node boxes in the image shown. The
   * scene is drawn into an image (all of it, or a tile around the view) that panning then
   * moves: the browser rasterizes texts and curves once, not every frame. */
  function draw(scene, view) {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
    if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
    screen.setTransform(1, 0, 0, 1, 0, 0);
    screen.clearRect(0, 0, canvas.width, canvas.height);
    if (!scene) return 0;
    const { k } = view;
    const b = scene.bounds;
    const w = Math.ceil((b.width + 2) * k * ratio);
    const h = Math.ceil((b.height + 2) * k * ratio);
    const area = { x: -view.x / k, y: -view.y / k, width: width / k, height: height / k };
    // The part of the scene kept as an image: all of it when small enough, else a tile of
    // TILE views around the one shown, drawn again once the view leaves it.
    const fresh = snapshot !== null && snapshot.scene === scene && snapshot.k === k;
    const whole = w * h <= SNAPSHOT_PIXELS;
    let part = fresh && (whole || contains(snapshot.part, area)) ? snapshot.part : null;
    if (part === null && whole) {
      part = { x: b.x - 1, y: b.y - 1, width: b.width + 2, height: b.height + 2 };
    } else if (part === null) {
      part = {
        x: area.x - (area.width * (TILE - 1)) / 2,
        y: area.y - (area.height * (TILE - 1)) / 2,
        width: area.width * TILE,
        height: area.height * TILE,
      };
    }
    if (!fresh || snapshot.part !== part) {
      const image = document.createElement("canvas");
      image.width = Math.ceil(part.width * k * ratio);
      image.height = Math.ceil(part.height * k * ratio);
      ctx = image.getContext("2d");
      ctx.setTransform(ratio * k, 0, 0, ratio * k, -ratio * part.x * k, -ratio * part.y * k);
      const count = paint(visibleItems(scene, part), k);
      ctx = screen;
      snapshot = { scene, k, part, image, count };
    }
    const x = ratio * (view.x + part.x * k);
    const y = ratio * (view.y + part.y * k);
    screen.drawImage(snapshot.image, Math.round(x), Math.round(y));
    return snapshot.count;
  }

  function contains(outer, inner) {
    return (
      inner.x >= outer.x &&
      inner.y >= outer.y &&
      inner.x + inner.width <= outer.x + outer.width &&
      inner.y + inner.height <= outer.y + outer.height
    );
  }

  /** Paint the items `shown` of a scene on `ctx` (its transform set) at zoom `k`. */
  function paint(shown, k) {
    const texts = k >= LOD.text;
    for (const frame of shown.frames) {
      const style = styleOf("g", "tk-group", { tag: "rect" });
      ctx.beginPath();
      ctx.roundRect(frame.x, frame.y, frame.width, frame.height, 6);
      fillAndStroke(style);
      if (texts) {
        const header = styleOf("text", "tk-group-header");
        text(header, clip(frame.label, frame.width), frame.x + 6, frame.y + 13, "left");
      }
    }
    strokeBatches(shown.edges, (e) => e.classes.join(" "), (e) => curve(e.d));
    if (k >= LOD.arrows) {
      const arrow = styleOf("path", "tk-arrow");
      ctx.beginPath();
      for (const e of shown.edges) if (e.arrow) triangle(e.arrow);
      ctx.fillStyle = arrow.fill;
      ctx.fill();
    }
    strokeBatches(shown.links, () => "tk-link", (l) => curve(l.d));
    if (texts) {
      for (const t of shown.texts) text(styleOf("text", t.classes.join(" ")), t.text, t.x, t.y, "center");
    }
    const batches = new Map();
    for (const node of shown.nodes) {
      const key = `${node.classes.join(" ")}|${node.fill || ""}`;
      if (!batches.has(key)) batches.set(key, []);
      batches.get(key).push(node);
    }
    for (const [key, nodes] of batches) {
      const [classes, fill] = key.split("|");
      const style = styleOf("g", classes, { tag: "rect" });
      ctx.globalAlpha = style.alpha;
      ctx.beginPath();
      for (const n of nodes) {
        ctx.moveTo(n.x + n.width, n.y + n.height / 2);
        ctx.roundRect(n.x, n.y, n.width, n.height, k < LOD.arrows ? 0 : cornerRadius(n));
      }
      fillAndStroke(fill ? { ...style, fill } : style);
      if (texts) {
        const op = styleOf("g", classes, { tag: "text", class: "tk-node-op" });
        const shape = styleOf("g", classes, { tag: "text", class: "tk-node-shape" });
        for (const n of nodes) {
          text(op, clip(n.label, n.width), n.x + n.width / 2, n.y + 17, "center");
          text(shape, clip(n.sub, n.width), n.x + n.width / 2, n.y + 32, "center");
        }
      }
      ctx.globalAlpha = 1;
    }
    return shown.nodes.length;
  }

  function fillAndStroke(style) {
    if (style.fill && style.fill !== "none") {
      ctx.fillStyle = style.fill;
      ctx.fill();
    }
    if (style.stroke && style.stroke !== "none") {
      ctx.setLineDash(style.dash);
      ctx.lineWidth = style.width;
      ctx.strokeStyle = style.stroke;
      ctx.stroke();
      ctx.setLineDash([]);
    }
  }

  function strokeBatches(list, keyOf, trace) {
    const batches = new Map();
    for (const item of list) {
      const key = keyOf(item);
      if (!batches.has(key)) batches.set(key, []);
      batches.get(key).push(item);
    }
    for (const [key, items] of batches) {
      const style = styleOf("path", key);
      ctx.beginPath();
      for (const item of items) trace(item);
      fillAndStroke({ ...style, fill: "none" });
    }
  }

  function curve(d) {
    ctx.moveTo(d[0], d[1]);
    for (let i = 2; i < d.length; i += 6) {
      ctx.bezierCurveTo(d[i], d[i + 1], d[i + 2], d[i + 3], d[i + 4], d[i + 5]);
    }
  }

  function triangle(t) {
    ctx.moveTo(t[0], t[1]);
    ctx.lineTo(t[2], t[3]);
    ctx.lineTo(t[4], t[5]);
    ctx.closePath();
  }

  function text(style, value, x, y, align) {
    ctx.font = style.font;
    ctx.fillStyle = style.fill;
    ctx.textAlign = align;
    ctx.fillText(value, x, y);
  }

  return {
    draw,
    destroy() {
      probe.remove();
    },
  };
}
