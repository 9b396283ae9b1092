/**
 * The SVG painter: a scene (scene.js) as SVG elements, one `<g class="tk-node ...">` per
 * node box (with a `<title>`), `<g class="tk-group">` frames with a clickable header,
 * `path.tk-edge` curves with `path.tk-arrow` heads, dashed `path.tk-link`s and texts. Used
 * for scenes small enough that the DOM stays fast; styles come from widgets.css.
 */

import { s } from "./dom.js";
import { boxTitle } from "./scene.js";

/** A path ([x0, y0] then c1x, c1y, c2x, c2y, x, y per cubic segment) as SVG path data. */
export function curvePath(d) {
  let path = `M${d[0]},${d[1]}`;
  for (let i = 2; i < d.length; i += 6) {
    path += ` C${d[i]},${d[i + 1]} ${d[i + 2]},${d[i + 3]} ${d[i + 4]},${d[i + 5]}`;
  }
  return path;
}

/** Node box labels longer than this many characters are cut with an ellipsis. */
export const LABEL_CHARS = 20;

/**
 * A label cut to fit `width` graph units (about 7 units a character).
 * @param {string} text
 * @param {number} width
 * @returns {string}
 */
export function clip(text, width) {
  const chars = Math.max(LABEL_CHARS, Math.floor(width / 7) - 1);
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

/**
 * Replace `viewport`'s children by the scene's elements.
 * @param {SVGGElement} viewport
 * @param {import("./scene.js").Scene} scene
 * @param {{onNode: (box: object) => void, onFrame: (frame: object) => void}} handlers
 */
export function paintSvg(viewport, scene, handlers) {
  viewport.replaceChildren(); // then one by one: a huge graph overflows spread arguments
  const add = (element) => viewport.appendChild(element);
  for (const frame of scene.frames) {
    const header = s("text", {
      class: "tk-group-header",
      x: frame.x + 6,
      y: frame.y + 13,
      text: clip(frame.label, frame.width),
    });
    header.addEventListener("click", () => handlers.onFrame(frame));
    const rect = s("rect", { x: frame.x, y: frame.y, width: frame.width, height: frame.height, rx: 6 });
    add(s("g", { class: "tk-group", "data-path": frame.group }, [rect, header]));
  }
  for (const edge of scene.edges) {
    add(
      s("path", {
        class: edge.classes.join(" "),
        d: curvePath(edge.d),
        "data-source": edge.source,
        "data-target": edge.target,
        "data-position": edge.position,
      }),
    );
    if (edge.arrow) add(s("path", { class: "tk-arrow", d: trianglePath(edge.arrow) }));
  }
  for (const link of scene.links) {
    const attrs = { class: "tk-link", d: curvePath(link.d) };
    add(s("path", { ...attrs, "data-source": link.source, "data-target": link.target }));
  }
  for (const text of scene.texts) {
    add(s("text", { class: text.classes.join(" "), x: text.x, y: text.y, "data-edge": text.key, text: text.text }));
  }
  for (const node of scene.nodes) {
    const rect = s("rect", { width: node.width, height: node.height, rx: cornerRadius(node) });
    if (node.fill) rect.setAttribute("style", `fill: ${node.fill}`);
    const mid = node.width / 2;
    const g = s(
      "g",
      { class: node.classes.join(" "), "data-id": node.id, transform: `translate(${node.x},${node.y})` },
      [
        s("title", { text: boxTitle(node) }),
        rect,
        s("text", { class: "tk-node-op", x: mid, y: 17, text: clip(node.label, node.width) }),
        s("text", { class: "tk-node-shape", x: mid, y: 32, text: clip(node.sub, node.width) }),
      ],
    );
    g.addEventListener("click", () => handlers.onNode(node));
    add(g);
  }
}

/** Tensors are drawn as pills, ops and groups as rounded boxes. */
export function cornerRadius(node) {
  const pill = node.classes.includes("tk-tensor") || node.classes.includes("tk-leaf");
  return pill ? node.height / 2 : 8;
}

/** A triangle [x1, y1, x2, y2, x3, y3] as an SVG path. */
export function trianglePath(t) {
  return `M${t[0]},${t[1]} L${t[2]},${t[3]} L${t[4]},${t[5]} Z`;
}
