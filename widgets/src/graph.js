/**
 * The graph widget (anywidget front end): the SVG graph, a search box, and a side panel with
 * the selected node's details. Synced traits: `graph` (read), `selected`, `collapsed`
 * (written on clicks), `color_by` (read).
 */

import { h, nodeDetails } from "./dom.js";
import { graphView } from "./graphview.js";

/**
 * Render into `el`; returns the cleanup function that anywidget calls on removal.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  const search = h("input", { class: "tk-search", type: "search", placeholder: "Filter by op" });
  const panel = h("div", { class: "tk-panel" });
  const view = graphView({
    onSelect(id) {
      model.set("selected", model.get("selected") === id ? "" : id);
      model.save_changes();
    },
    onToggle(path) {
      const collapsed = model.get("collapsed");
      const next = collapsed.includes(path)
        ? collapsed.filter((p) => p !== path)
        : [...collapsed, path];
      model.set("collapsed", next);
      model.save_changes();
    },
  });
  const root = h("div", { class: "tk-widget tk-graph-widget" }, [
    h("div", { class: "tk-toolbar" }, [search]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), panel]),
  ]);
  el.append(root);

  const redraw = () => {
    const graph = model.get("graph");
    const selected = model.get("selected");
    view.update({
      graph,
      collapsed: model.get("collapsed"),
      selected,
      query: search.value,
      colorBy: model.get("color_by"),
      current: "",
    });
    const node = (graph.nodes || []).find((n) => n.id === selected);
    panel.replaceChildren(nodeDetails(node));
  };
  const events = ["change:graph", "change:selected", "change:collapsed", "change:color_by"];
  for (const name of events) model.on(name, redraw);
  search.addEventListener("input", redraw);
  redraw();

  return () => {
    for (const name of events) model.off(name, redraw);
    view.destroy();
    root.remove();
  };
}

export default { render };
