/**
 * The MIME extension: recordings render everywhere outputs do (notebooks, consoles, output
 * views), and recording files open in a tab. A file is a recording by its suffix
 * (`.tkrec.json`, `.tkrec`); any other `.json` file written by `Tape.save` opens with
 * "Open With > tensorkit recording".
 */

import { MIME_TYPE, RANK, recordingFactory } from "./renderer.js";

export const FILE_TYPE = "tensorkit-recording";

export default {
  id: "tensorkit:recording-renderer",
  rendererFactory: recordingFactory(),
  rank: RANK,
  dataType: "json",
  fileTypes: [
    {
      name: FILE_TYPE,
      displayName: "tensorkit recording",
      mimeTypes: [MIME_TYPE],
      extensions: [".tkrec.json", ".tkrec"],
      fileFormat: "text",
      contentType: "file",
      iconClass: "jp-JSONIcon",
    },
  ],
  documentWidgetFactoryOptions: {
    name: "tensorkit recording",
    primaryFileType: FILE_TYPE,
    fileTypes: [FILE_TYPE, "json"],
    defaultFor: [FILE_TYPE],
  },
};
