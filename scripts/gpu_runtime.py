#!/usr/bin/env python3
"""Makes the Vulkan runtime that vkattn's build needs usable on a machine that
lacks it, from the Debian packages that scripts/fetch-gpu-debs.sh put in .gl/.

1. Unpacks the needed packages (.gl/NEEDED: the Vulkan loader, cmocka, the
   Khronos validation layer) into --into (default /, then ldconfig, as
   ../shared/GPU.md does; a private folder with LD_LIBRARY_PATH when not root),
   except those dpkg says are installed already (never downgrades them).
2. Finds the validation layer's manifest and, with --nvidia, NVIDIA's Vulkan
   driver manifest (nvidia_icd.json).
3. Runs ldd on the --check files, the loader, the layer and the driver library;
   for each library reported missing (or too old, "version `GLIBCXX_3.4.30' not
   found") it unpacks the spare package in .gl/ that holds a file of that name,
   and checks again.

Prints `export NAME=value` lines for the shell to eval on stdout, everything
else on stderr. Exit status 1 when a library stays missing or a manifest is not
found, with what is missing. Uses only the standard library; dpkg-deb when
there is one, else reads the .deb itself (ar archive, data.tar.xz/gz).
"""
import argparse
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile

ARCH_DIR = "x86_64-linux-gnu"
LAYER_JSON = "VkLayer_khronos_validation.json"
NVIDIA_ICD_PLACES = [  # the usual places, ../shared/GPU.md's first
    "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/usr/local/share/vulkan/icd.d/nvidia_icd.json",
]
LAYER_DIRS = [
    "/usr/share/vulkan/explicit_layer.d",
    "/etc/vulkan/explicit_layer.d",
    "/usr/local/share/vulkan/explicit_layer.d",
]


def say(msg):
    print("gpu-runtime: " + msg, file=sys.stderr, flush=True)


# ---- .deb files ---------------------------------------------------------------

def ar_members(path):
    """(name, bytes) of each member of an ar archive (a .deb is one)."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise ValueError(f"{path}: not a .deb (ar) file")
        while True:
            header = f.read(60)
            if len(header) < 60:
                return
            name = header[:16].decode().strip().rstrip("/")
            size = int(header[48:58].decode().strip())
            data = f.read(size)
            if size % 2:
                f.read(1)
            yield name, data


def deb_data_tar(path):
    for name, data in ar_members(path):
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                raise ValueError(f"{path}: data.tar.zst needs dpkg-deb")
            return tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    raise ValueError(f"{path}: no data.tar member")


class Deb:
    def __init__(self, path):
        self.path = path
        self.package = os.path.basename(path).split("_")[0]
        with deb_data_tar(path) as tar:
            self.files = [m.name.lstrip("./") for m in tar.getmembers() if not m.isdir()]
        self.unpacked = False

    def holds(self, basename):
        return any(os.path.basename(f) == basename for f in self.files)

    def unpack(self, dest):
        if shutil.which("dpkg-deb"):
            subprocess.run(["dpkg-deb", "-x", self.path, dest], check=True)
        else:
            with deb_data_tar(self.path) as tar:
                if hasattr(tarfile, "fully_trusted_filter"):
                    tar.extractall(dest, filter="fully_trusted")
                else:
                    tar.extractall(dest)
        self.unpacked = True
        say(f"unpacked {os.path.basename(self.path)} into {dest}")


def dpkg_installed(package):
    if not shutil.which("dpkg-query"):
        return False
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip().endswith("install ok installed")


# ---- finding libraries ----------------------------------------------------------

class Runtime:
    def __init__(self, dest, lib_dirs):
        self.dest = dest
        self.lib_dirs = lib_dirs        # for LD_LIBRARY_PATH (private prefix only)

    def env(self):
        env = dict(os.environ)
        if self.lib_dirs:
            old = env.get("LD_LIBRARY_PATH", "")
            env["LD_LIBRARY_PATH"] = ":".join(self.lib_dirs + ([old] if old else []))
        return env

    def refresh(self):
        if self.dest == "/" and shutil.which("ldconfig"):
            subprocess.run(["ldconfig"], check=False)

    def find_library(self, name):
        """The path the dynamic loader would open for a bare library name, roughly."""
        dirs = [d for d in self.env().get("LD_LIBRARY_PATH", "").split(":") if d]
        for d in dirs:
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
        if shutil.which("ldconfig"):
            out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                parts = line.strip().split(" => ")
                if len(parts) == 2 and parts[0].split(" ")[0] == name and "x86-64" in parts[0]:
                    return parts[1]
        for d in (f"/usr/lib/{ARCH_DIR}", f"/lib/{ARCH_DIR}", "/usr/lib64", "/lib64",
                  "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
        return None

    def ldd_problems(self, path):
        """[(library name, what)] that ldd reports for path."""
        if not shutil.which("ldd"):
            return []
        r = subprocess.run(["ldd", path], capture_output=True, text=True, env=self.env())
        problems = []
        for line in (r.stdout + r.stderr).splitlines():
            line = line.strip()
            if "=> not found" in line:
                problems.append((line.split()[0], "not found"))
            elif "version `" in line and "not found" in line:
                # "/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by X)"
                lib = os.path.basename(line.split(":")[0])
                version = line.split("`")[1].split("'")[0]
                problems.append((lib, f"has no {version}"))
        return problems


def manifest_library(manifest, key):
    with open(manifest) as f:
        lib = json.load(f)[key]["library_path"]
    if "/" in lib and not os.path.isabs(lib):
        lib = os.path.normpath(os.path.join(os.path.dirname(manifest), lib))
    return lib


def find_nvidia_icd():
    for var in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES"):
        for path in os.environ.get(var, "").split(":"):
            if path and os.path.isfile(path):
                return path, f"${var}"
    for path in NVIDIA_ICD_PLACES:
        if os.path.isfile(path):
            return path, "a usual place"
    if not (os.path.exists("/proc/driver/nvidia") or os.path.exists("/dev/nvidiactl")):
        return None, None   # no NVIDIA kernel driver: nothing to search for
    say("no nvidia_icd.json in the usual places; searching / (60 s at most)")
    try:
        r = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o",
                            "-path", "/dev", ")", "-prune", "-o", "-name", "nvidia_icd*.json",
                            "-print"], capture_output=True, text=True, timeout=60)
        found = sorted(p for p in r.stdout.splitlines() if p)
    except (subprocess.TimeoutExpired, FileNotFoundError):
        found = []
    return (found[0], "find /") if found else (None, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--debs", default=".gl", help="folder of .deb files and NEEDED (default .gl)")
    ap.add_argument("--into", help="unpack into this folder (default: / as root, else DEBS/root)")
    ap.add_argument("--nvidia", action="store_true",
                    help="find NVIDIA's Vulkan driver manifest and export VK_DRIVER_FILES")
    ap.add_argument("--check", nargs="*", default=[], help="ELF files whose libraries must resolve")
    args = ap.parse_args()

    dest = args.into or ("/" if os.geteuid() == 0 else os.path.join(args.debs, "root"))
    dest = os.path.abspath(dest)
    lib_dirs = [] if dest == "/" else [os.path.join(dest, "usr/lib", ARCH_DIR),
                                       os.path.join(dest, "lib", ARCH_DIR)]
    rt = Runtime(dest, lib_dirs)
    exports = {}
    failures = []

    debs = {}
    if os.path.isdir(args.debs):
        for name in sorted(os.listdir(args.debs)):
            if name.endswith(".deb"):
                deb = Deb(os.path.join(args.debs, name))
                debs[deb.package] = deb
    needed = []
    needed_file = os.path.join(args.debs, "NEEDED")
    if os.path.isfile(needed_file):
        needed = [l.strip() for l in open(needed_file) if l.strip()]
    if not debs:
        say(f"no .deb files in {args.debs}/: using what this machine has")

    # 1. The needed packages.
    os.makedirs(dest, exist_ok=True)
    for package in needed:
        if package not in debs:
            say(f"{package}: not in {args.debs}/ (run scripts/fetch-gpu-debs.sh where you built)")
        elif dest == "/" and dpkg_installed(package):
            say(f"{package}: installed on this machine, kept")
        else:
            debs[package].unpack(dest)
    rt.refresh()

    # 2. Manifests.
    layer_dirs = [os.path.join(dest, "usr/share/vulkan/explicit_layer.d")] + LAYER_DIRS
    layer_dir = next((d for d in layer_dirs if os.path.isfile(os.path.join(d, LAYER_JSON))), None)
    checks = list(args.check)
    if layer_dir:
        exports["VK_LAYER_PATH"] = layer_dir
        lib = manifest_library(os.path.join(layer_dir, LAYER_JSON), "layer")
        path = lib if os.path.isabs(lib) else rt.find_library(lib)
        if path:
            checks.append(path)
        else:
            failures.append(f"the validation layer's library {lib} is not on this machine")
    else:
        failures.append(f"no {LAYER_JSON} (the tests need the validation layer: "
                        "vulkan-validationlayers in .gl/)")
    loader = rt.find_library("libvulkan.so.1")
    if loader:
        checks.append(loader)
    else:
        failures.append("no Vulkan loader libvulkan.so.1 (libvulkan1 in .gl/)")
    if args.nvidia:
        icd, how = find_nvidia_icd()
        if icd:
            say(f"NVIDIA Vulkan driver manifest: {icd} (from {how})")
            exports["VK_DRIVER_FILES"] = icd      # loaders from 1.3.207 on
            exports["VK_ICD_FILENAMES"] = icd     # older loaders
            lib = manifest_library(icd, "ICD")
            path = lib if os.path.isabs(lib) else rt.find_library(lib)
            if path:
                checks.append(path)
            else:
                failures.append(f"{icd} names {lib}, which is not on this machine (a container "
                                "needs NVIDIA_DRIVER_CAPABILITIES with 'graphics' or 'all')")
        else:
            say("no nvidia_icd.json on this machine: the loader's own search decides")

    # 3. Libraries, with the spares unpacked on demand.
    for _ in range(8):
        problems = {}
        for path in checks:
            for lib, what in rt.ldd_problems(path):
                problems.setdefault(lib, (what, path))
        progress = False
        for lib, (what, path) in sorted(problems.items()):
            spare = next((d for d in debs.values() if not d.unpacked and d.holds(lib)), None)
            if spare:
                say(f"{lib} {what} (needed by {path}): unpacking {spare.package}")
                spare.unpack(dest)
                progress = True
        if not progress:
            break
        rt.refresh()
    for lib, (what, path) in sorted(problems.items()):
        failures.append(f"{lib} {what} (needed by {path}), and no package in {args.debs}/ holds it")

    if lib_dirs:
        exports["LD_LIBRARY_PATH"] = rt.env()["LD_LIBRARY_PATH"]
    for name, value in exports.items():
        print(f"export {name}={shlex.quote(value)}")
    for f in failures:
        say("ERROR: " + f)
    say(f"checked {len(checks)} files with ldd: "
        + ("all libraries found" if not problems else f"{len(problems)} missing"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
