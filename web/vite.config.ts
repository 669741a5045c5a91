import { defineConfig, type Plugin } from "vite";

// inline puts the script and the stylesheet into index.html, so that the
// built client is one file: the server embeds it, and it also works opened
// straight from disk (file://) to look at a recording without any server.
function inline(): Plugin {
  return {
    name: "numascope-inline",
    enforce: "post",
    generateBundle(_opts, bundle) {
      const html = bundle["index.html"];
      if (!html || html.type !== "asset") return;
      let src = String(html.source);
      for (const [name, item] of Object.entries(bundle)) {
        if (item.type === "chunk" && item.isEntry) {
          const tag = new RegExp(`<script type="module" crossorigin src="[^"]*${name}"></script>`);
          const code = item.code.replace(/<\/script/g, "<\\/script");
          src = src.replace(tag, () => "");
          src = src.replace("</body>", () => `<script type="module">${code}</script>\n</body>`);
          delete bundle[name];
        } else if (item.type === "asset" && name.endsWith(".css")) {
          const tag = new RegExp(`<link rel="stylesheet" crossorigin href="[^"]*${name}">`);
          src = src.replace(tag, () => `<style>${String(item.source)}</style>`);
          delete bundle[name];
        }
      }
      html.source = src;
    },
  };
}

export default defineConfig({
  base: "./",
  plugins: [inline()],
  build: {
    outDir: "../internal/web/dist",
    emptyOutDir: true,
    assetsInlineLimit: 100000000,
    cssCodeSplit: false,
    modulePreload: false,
    target: "es2022",
  },
});
