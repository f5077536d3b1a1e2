"""How the CLI prints objects: `output` (-o json/yaml/name), `tables` (kubectl's columns,
-o wide) and `describe`."""
