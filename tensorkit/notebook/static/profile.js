/* tensorkit widgets bundle: esbuild 0.28.2, widgets/src sha256=6221e5dbe86a74570b04ca49e433eae0a731a43c9d3ecb398e0e63e02143f777 */

// widgets/src/profile.js
function render({ el }) {
  el.textContent = "profile view";
}
var profile_default = { render };
export {
  profile_default as default
};
