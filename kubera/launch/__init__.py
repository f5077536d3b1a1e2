"""Starting and stopping a cluster: the supervisor (etcd, Ray and the control-plane actors)
and its options, the Ray bootstrap (ray.py), the embedded etcd process, process bookkeeping
and the context file that `kubera up` writes. The only package in kubera/ that imports Ray."""
