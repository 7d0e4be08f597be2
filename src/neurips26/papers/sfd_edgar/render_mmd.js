// Render MultiMarkdown from stdin to HTML with markdown-it + markdown-it-multimd-table
// (the independent table oracle of tests/papers/sfd_edgar/test_oracle.py).
const path = require("path");
const base = process.env.SFD_NODE_MODULES;
const md = require(path.join(base, "markdown-it"))({ html: false })
  .use(require(path.join(base, "markdown-it-multimd-table")), {
    multiline: false, rowspan: true, headerless: true, multibody: false,
  });
let src = "";
process.stdin.on("data", (d) => { src += d; });
process.stdin.on("end", () => { process.stdout.write(md.render(src)); });
