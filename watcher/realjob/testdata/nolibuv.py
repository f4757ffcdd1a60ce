"""A TCPStore without libuv where the PyTorch build has none.

Debian 13's PyTorch 2.6 is built without libuv, and with USE_LIBUV=0 set
only init_process_group's own store honours it: torchrun's rendezvous
(torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py, the
TCPStore(...) of next_rendezvous) and the workers' client of torchrun's
store (torch/distributed/rendezvous.py, _create_c10d_store under
TORCHELASTIC_USE_AGENT_STORE) name no backend and get libuv, which fails:
"use_libuv was requested but PyTorch was build without libuv support".

Imported before the rendezvous runs, with USE_LIBUV=0, this module makes
every TCPStore that names no backend take the classic one, in the
modules that hold the name. PyTorch 1.13 has no libuv backend at all and
is left alone. Run as a script, it is torchrun (torch.distributed.run).
"""
import os
import sys

import torch.distributed as dist


def patch():
    base = dist.TCPStore
    if os.environ.get("USE_LIBUV") != "0" or not hasattr(base, "libuvBackend"):
        return

    class TCPStore(base):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    import torch.distributed.elastic.rendezvous.static_tcp_rendezvous  # noqa: F401 (holds the name)
    for mod in list(sys.modules.values()):
        if getattr(mod, "TCPStore", None) is base and mod.__name__.startswith("torch.distributed"):
            mod.TCPStore = TCPStore


patch()

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.exit(main())
