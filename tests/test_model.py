import pickle
import subprocess
import sys

from svclog.model import Labels


def test_labels_unpickled_in_another_process_hash_like_local_ones():
    # string hashing is randomised per process; a pickled hash would break dict lookups
    data = pickle.dumps({Labels({"app": "api", "env": "prod"}.items()): 1})
    code = ("import pickle,sys; from svclog.model import Labels; d = pickle.loads(sys.stdin.buffer.read()); "
            "print(d[Labels({'app': 'api', 'env': 'prod'}.items())])")
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60,
                         env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert out.stdout.strip() == b"1", out.stderr
