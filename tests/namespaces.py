"""Whether this machine lets a test make network namespaces with a tc qdisc (the
rate-limited links of benchmarks/limited_link.py and benchmarks/ddp_overlap.py --link)."""
import os
import shutil


def namespaces_permitted():
    """None where they can be made, else why not (for pytest.mark.skipif's reason)."""
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2 (ip, tc)"
    if os.geteuid() != 0:
        return "ip netns add needs root (CAP_NET_ADMIN)"
    return None
