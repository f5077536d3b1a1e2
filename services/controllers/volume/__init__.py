"""The volume controllers (upstream pkg/controller/volume): the PersistentVolume
controller (`persistentvolume.py`: binding, delayed binding, the hollow provisioner,
reclaim) and the pvc-protection / pv-protection controllers (`protection.py`)."""
