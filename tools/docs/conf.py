# Sphinx configuration of `make docs` (the collection's HTML documentation, built offline into .build/docs/html).
# Made from antsibull-docs sphinx-init's conf.py, with intersphinx off (no network) and references to the Ansible
# docsite resolved to its URLs, so that sphinx -W -n fails on broken references inside this collection's docs only.

project = "clusterapi.aws"
copyright = "Contributors to clusterapi.aws"
title = "clusterapi.aws"
html_short_title = "clusterapi.aws"

extensions = ["sphinx_antsibull_ext"]
pygments_style = "ansible"
highlight_language = "YAML+Jinja"
html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
default_role = "any"

OWN = "ansible_collections.clusterapi.aws."
ANSIBLE_DOCS = "https://docs.ansible.com/projects/ansible/latest/"
# Labels of the Ansible docsite that antsibull-docs' pages reference (intersphinx would resolve them online).
ANSIBLE_LABELS = {
    "common_return_values": "reference_appendices/common_return_values.html",
    "ansible_configuration_settings": "reference_appendices/config.html",
    "action_plugins": "plugins/action.html",
    "callback_plugins": "plugins/callback.html",
    "inventory_plugins": "plugins/inventory.html",
}


def _external(app, env, node, contnode):
    """Resolve a reference to the Ansible docsite or another collection's plugin to its URL; leave this
    collection's own references alone, so a broken one stays a warning (an error under -W)."""
    from docutils import nodes

    target = node.get("reftarget", "")
    if target.startswith(OWN):
        return None
    if target in ANSIBLE_LABELS:
        url = ANSIBLE_DOCS + ANSIBLE_LABELS[target]
    elif node.get("reftype") == "envvar" and target.startswith("ANSIBLE_"):
        # ansible-core's own settings (the inventory cache's ANSIBLE_CACHE_PLUGIN ...) are documented there.
        url = f"{ANSIBLE_DOCS}reference_appendices/config.html#envvar-{target}"
    elif target.startswith("ansible_collections.") and target.count(".") >= 3:
        namespace, name, page = target.split(".", 3)[1:]
        url = f"{ANSIBLE_DOCS}collections/{namespace}/{name}/{page}.html"
    else:
        return None
    reference = nodes.reference("", "", internal=False, refuri=url)
    reference += contnode
    return reference


def setup(app):
    app.connect("missing-reference", _external)
