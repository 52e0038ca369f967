"""The in-air variants of Gymnasium's ant and humanoid that the device runs
stepped: every geom's contype and conaffinity set to 0 (nothing collides, so
the model can live on the device; contacts are issue 34).

    python3 scripts/in-air.py <gymnasium assets dir> <out dir>

(scripts/gpu-report runs it when Gymnasium's files are at hand.)
"""
import sys
import xml.etree.ElementTree as ET

assets, out = sys.argv[1], sys.argv[2]
for name in ["ant", "humanoid"]:
    tree = ET.parse(f"{assets}/{name}.xml")
    for geom in tree.iter("geom"):
        geom.set("contype", "0")
        geom.set("conaffinity", "0")
    tree.write(f"{out}/{name}_air.xml")
