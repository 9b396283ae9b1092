/**
 * The graph widget (anywidget front end): the graph view (graphview.js), a toolbar (search,
 * colouring mode, gradient ops shown or not, the colour legend) and a side panel with the
 * selected node's details (for a tk.jit graph also its kernels, breaks and guards:
 * jit_panel.js). Synced traits: `graph` (read), `selected` (written on clicks; set
 * from Python, the view opens the groups hiding the node and pans to it), `collapsed`
 * (written on clicks, expand all and collapse all), `color_by` and `show_backward` (read, and
 * written from the toolbar).
 */

import { h, legendView, nodeDetails, redrawOn } from "./dom.js";
import { COLOR_MODES, colorMode } from "./format.js";
import { graphView } from "./graphview.js";
import { isFused, jitSections } from "./jit_panel.js";

/**
 * Render into `el`; returns the cleanup function that anywidget calls on removal.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  const search = h("input", { class: "tk-search", type: "search", placeholder: "Search ops, groups" });
  const colorBy = h(
    "select",
    { class: "tk-color-by", title: "Colour nodes by" },
    Object.entries(COLOR_MODES).map(([mode, { label }]) =>
      h("option", { value: mode, text: mode === "none" ? "no colour" : label }),
    ),
  );
  const backward = h("input", { class: "tk-show-backward", type: "checkbox" });
  const backwardToggle = h("label", { class: "tk-toggle" }, [backward, "gradient ops"]);
  const legend = h("div", { class: "tk-legend-slot" });
  const panel = h("div", { class: "tk-panel" });
  const set = (name, value) => {
    model.set(name, value);
    model.save_changes();
  };
  let openedFused = ""; // the fused group opened last: the panel shows its kernel
  const followFused = (path, opening) => {
    if (opening && isFused(model.get("graph"), path)) openedFused = path;
    else if (!opening && openedFused === path) openedFused = "";
  };
  const view = graphView({
    onSelect(id) {
      set("selected", model.get("selected") === id ? "" : id);
    },
    onToggle(path) {
      const collapsed = model.get("collapsed");
      followFused(path, collapsed.includes(path));
      set(
        "collapsed",
        collapsed.includes(path) ? collapsed.filter((p) => p !== path) : [...collapsed, path],
      );
    },
    onCollapse(ids) {
      set("collapsed", ids);
    },
  });
  const root = h("div", { class: "tk-widget tk-graph-widget" }, [
    h("div", { class: "tk-toolbar" }, [search, colorBy, backwardToggle, legend]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), panel]),
  ]);
  el.append(root);

  const redraw = () => {
    const graph = model.get("graph");
    const selected = model.get("selected");
    const showBackward = model.get("show_backward") ?? true;
    colorBy.value = colorMode(model.get("color_by") || "none");
    backward.checked = showBackward;
    backwardToggle.hidden = !(graph.nodes || []).some((n) => n.band > 0);
    const drawn = view.update({
      graph,
      collapsed: model.get("collapsed") || [],
      selected,
      query: search.value,
      colorBy: colorBy.value,
      current: "",
      showBackward,
    });
    legend.replaceChildren(legendView(drawn.legend));
    const node = (graph.nodes || []).find((n) => n.id === selected);
    panel.replaceChildren(nodeDetails(node), ...jitSections(graph, node, openedFused));
  };
  const events = [
    "change:graph",
    "change:selected",
    "change:collapsed",
    "change:color_by",
    "change:show_backward",
  ];
  search.addEventListener("input", redraw);
  colorBy.addEventListener("change", () => set("color_by", colorBy.value));
  backward.addEventListener("change", () => set("show_backward", backward.checked));
  const stop = redrawOn(model, events, redraw);

  return () => {
    stop();
    view.destroy();
    root.remove();
  };
}

export default { render };
