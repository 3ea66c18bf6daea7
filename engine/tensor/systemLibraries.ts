/**
 * What the GPU rungs of the backend ladder (backend.ts) need from the machine, as the dynamic linker would find it: the
 * CUDA / cuDNN libraries of tfjs-node-gpu, the Vulkan loader and driver manifests Dawn opens, any shared library by
 * its soname. `doctor` reports them whichever backend was chosen.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * The CUDA 11.2 / cuDNN 8.1 libraries that libtensorflow 2.9 (under tfjs-node-gpu 4.x) opens at run time. Without them
 * the GPU build either fails to load or, more often, loads and quietly runs on the CPU.
 */
export const CUDA_LIBRARIES = [
  'libcudart.so.11.0',
  'libcublas.so.11',
  'libcublasLt.so.11',
  'libcufft.so.10',
  'libcurand.so.10',
  'libcusolver.so.11',
  'libcusparse.so.11',
  'libcudnn.so.8',
] as const;

export const CUDA_REQUIREMENT =
  'the GPU build (@tensorflow/tfjs-node-gpu 4.x, libtensorflow 2.9) needs CUDA 11.2 and cuDNN 8.1: ' +
  `${CUDA_LIBRARIES.join(', ')} on the library path (LD_LIBRARY_PATH or ldconfig); newer CUDA majors (12.x) do not satisfy it`;

/** The CUDA / cuDNN libraries of CUDA_LIBRARIES that the dynamic linker would not find here. */
export function missingCudaLibraries(): string[] {
  return CUDA_LIBRARIES.filter((lib) => findSharedLibrary(lib) === null);
}

export function cudaHint(): string {
  const missing = missingCudaLibraries();
  return missing.length
    ? ` — ${CUDA_REQUIREMENT}; not found here: ${missing.join(', ')}`
    : ` — ${CUDA_REQUIREMENT}; all of them were found here, so the error lies elsewhere`;
}

/** The folders the dynamic linker searches: LD_LIBRARY_PATH, /etc/ld.so.conf(.d), then the usual system folders. */
function librarySearchPath(): string[] {
  const dirs = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  const confs = ['/etc/ld.so.conf'];
  try {
    for (const f of fs.readdirSync('/etc/ld.so.conf.d').sort()) {
      if (f.endsWith('.conf')) confs.push(path.join('/etc/ld.so.conf.d', f));
    }
  } catch {
    // no ld.so.conf.d
  }
  for (const conf of confs) {
    try {
      for (const line of fs.readFileSync(conf, 'utf8').split('\n')) {
        const d = line.replace(/#.*/, '').trim();
        if (d.startsWith('/')) dirs.push(d);
      }
    } catch {
      // unreadable or absent
    }
  }
  const triple = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  dirs.push(`/usr/lib/${triple}`, `/lib/${triple}`, '/usr/lib64', '/lib64', '/usr/lib', '/lib', '/usr/local/lib');
  return [...new Set(dirs)];
}

/** Where the dynamic linker would find a shared library (by its soname), or null. Linux only; elsewhere null. */
export function findSharedLibrary(soname: string): string | null {
  if (process.platform !== 'linux') return null;
  for (const d of librarySearchPath()) {
    const p = path.join(d, soname);
    if (fs.existsSync(p)) return p;
  }
  return null;
}

export interface VulkanEnvironment {
  /** libvulkan.so.1, the Vulkan loader Dawn opens, or null when the dynamic linker would not find it. */
  loader: string | null;
  /** Installable client driver manifests the loader would read (NVIDIA's is nvidia_icd.json). */
  icds: string[];
}

/** What Dawn needs on Linux to reach a GPU: the Vulkan loader and at least one driver (ICD) manifest. */
export function vulkanEnvironment(): VulkanEnvironment {
  const loader = findSharedLibrary('libvulkan.so.1');
  const explicit = (process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? '').split(':').filter(Boolean);
  let icds: string[];
  if (explicit.length) icds = explicit.filter((f) => fs.existsSync(f));
  else {
    const roots = [
      ...(process.env.XDG_CONFIG_DIRS ?? '/etc/xdg').split(':'),
      '/etc',
      ...(process.env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share').split(':'),
      '/usr/local/share',
      '/usr/share',
    ];
    icds = [];
    for (const r of new Set(roots.filter(Boolean))) {
      const d = path.join(r, 'vulkan', 'icd.d');
      try {
        for (const f of fs.readdirSync(d).sort()) if (f.endsWith('.json')) icds.push(path.join(d, f));
      } catch {
        // no such folder
      }
    }
  }
  return { loader, icds: [...new Set(icds)] };
}

export function describeVulkan(v: VulkanEnvironment): string {
  const icds = v.icds.length ? v.icds.join(', ') : 'none (looked in */vulkan/icd.d and VK_ICD_FILENAMES)';
  return `Vulkan loader ${v.loader ?? 'not found'}; driver manifests: ${icds}`;
}
