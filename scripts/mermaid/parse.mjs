// Parse Mermaid diagrams with Mermaid's own parser, without a browser.
// Input (stdin): a JSON array of diagram sources. Output (stdout): a JSON array with, for each
// diagram, null when it parses or the parser's error message.
// Setup once: npm install --prefix scripts/mermaid   (see scripts/mermaid/README.md)
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
globalThis.DOMParser = dom.window.DOMParser;
globalThis.Element = dom.window.Element;
try { globalThis.navigator = dom.window.navigator; } catch { /* read-only in newer Node */ }

const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

const diagrams = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const text of diagrams) {
  try {
    await mermaid.parse(text);
    results.push(null);
  } catch (error) {
    results.push(String((error && error.message) || error));
  }
}
process.stdout.write(JSON.stringify(results));
