"""The web server: the pages (a team page at "/" and one page per role), the middlewares and the
upload and session hardening around them, the changes to Gradio they need, and serving (TLS
included). cli.py starts it through web.serving.serve; web.app assembles the parts."""
