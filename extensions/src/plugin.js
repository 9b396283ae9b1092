/**
 * The plugin that gives each notebook (JupyterLab and Notebook 7) and each console its own
 * recording renderer, bound to its rendermime registry, so that a recording output can hand
 * over to the live widget view when the widget's model is alive (see renderer.js).
 */

import { IConsoleTracker } from "@jupyterlab/console";
import { RANK, recordingFactory } from "./renderer.js";
import "../style/index.css";

/** Put a recording renderer bound to `rendermime` ahead of its widget view. */
function bindTo(rendermime) {
  rendermime.addFactory(recordingFactory(rendermime), RANK);
}

const plugin = {
  id: "tensorkit:notebook-recordings",
  description: "Saved tensorkit outputs render with no kernel; live widgets stay live.",
  autoStart: true,
  optional: [IConsoleTracker],
  activate(app, consoles) {
    app.docRegistry.addWidgetExtension("Notebook", {
      createNew(panel) {
        bindTo(panel.content.rendermime);
      },
    });
    if (consoles) consoles.widgetAdded.connect((_, panel) => bindTo(panel.console.rendermime));
  },
};

export default plugin;
