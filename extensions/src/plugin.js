/**
 * The plugin that gives each notebook (JupyterLab and Notebook 7) its own recording renderer,
 * bound to the notebook's rendermime registry, so that a recording output can hand over to
 * the live widget view when the widget's model is alive (see renderer.js).
 */

import { RANK, recordingFactory } from "./renderer.js";
import { SAVED_NOTE } from "../../widgets/src/recording_view.js";
import "../style/index.css";

const plugin = {
  id: "tensorkit:notebook-recordings",
  description: "Saved tensorkit outputs render with no kernel; live widgets stay live.",
  autoStart: true,
  activate(app) {
    app.docRegistry.addWidgetExtension("Notebook", {
      createNew(panel) {
        const rendermime = panel.content.rendermime;
        rendermime.addFactory(recordingFactory(rendermime, SAVED_NOTE), RANK);
      },
    });
  },
};

export default plugin;
