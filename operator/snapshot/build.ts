/**
 * Builds the start-up snapshot of `render` (see entry.ts): `node operator/snapshot/build.ts`.
 * npm install runs it (the `prepare` script), and `render` runs it in the background when the
 * snapshot it started from is out of date. Options: --quiet (no output), --if-possible (exit 0,
 * saying why, when it cannot build: no esbuild, which is a devDependency, or a read-only install).
 *
 * The snapshot goes to MEMCACHED_OPERATOR_SNAPSHOT_DIR (default node_modules/.cache/memcached-operator)
 * as `current/` → `build-…/` holding `render.blob` and `node`, a hard link to the very node binary
 * that built it: a blob works only with that binary, and the launcher compares the two inodes.
 * The link is swapped atomically, so a concurrent `render` sees the old build or the new one.
 */
import { spawnSync } from 'node:child_process'
import { closeSync, linkSync, mkdirSync, openSync, readdirSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const args = process.argv.slice(2)
const quiet = args.includes('--quiet')
const ifPossible = args.includes('--if-possible')
const unknown = args.filter((a) => a !== '--quiet' && a !== '--if-possible')
if (unknown.length > 0) {
  process.stderr.write(`usage: node operator/snapshot/build.ts [--quiet] [--if-possible]\nunknown argument: ${unknown[0]}\n`)
  process.exit(2)
}

/** Where snapshots live (the launcher computes the same default). */
function snapshotDir(): string {
  return resolve(process.env.MEMCACHED_OPERATOR_SNAPSHOT_DIR ?? join(root, 'node_modules', '.cache', 'memcached-operator'))
}

function say(line: string): void {
  if (!quiet) process.stderr.write(`render snapshot: ${line}\n`)
}

class CannotBuild extends Error {}

const lockAge = 120_000

/** Takes the build lock, or returns false when another build holds it (a lock older than two minutes is stale). */
function lock(file: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      closeSync(openSync(file, 'wx'))
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new CannotBuild(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code}`)
      const st = statSync(file, { throwIfNoEntry: false })
      if (st && Date.now() - st.mtimeMs < lockAge) return false
      rmSync(file, { force: true })
    }
  }
  return false
}

/** An ES module with the exports of a built-in module that loads it on first use (functions only: all `render` calls). */
function lazyBuiltin(id: string): string {
  const real = process.getBuiltinModule(id) as Record<string, unknown>
  const lines = [`let m; const load = () => (m ??= process.getBuiltinModule(${JSON.stringify(id)}));`, 'export default new Proxy({}, { get: (_, k) => load()[k], has: (_, k) => k in load() });']
  for (const name of Object.keys(real)) {
    if (typeof real[name] === 'function' && /^[A-Za-z_$][\w$]*$/.test(name)) {
      lines.push(`export function ${name}(...a) { return new.target ? new (load().${name})(...a) : load().${name}.apply(this, a); }`)
    }
  }
  return lines.join('\n')
}

function readlinkOrUndefined(path: string): string | undefined {
  try {
    return readlinkSync(path)
  } catch {
    return undefined
  }
}

async function build(dir: string): Promise<string> {
  let esbuild: typeof import('esbuild')
  try {
    esbuild = await import('esbuild')
  } catch {
    throw new CannotBuild('esbuild (a devDependency) is not installed, so render starts from the sources')
  }
  const out = join(dir, `build-${Date.now()}-${process.pid}`)
  let previous: string | undefined
  mkdirSync(out, { recursive: true })
  try {
    // The validator of the bundled chart's schema must be in the on-disk cache: a snapshot cannot load ajv.
    const warm = spawnSync(process.execPath, [join(root, 'operator', 'cli', 'main.js'), 'lint'], { cwd: root, encoding: 'utf8' })
    if (warm.status !== 0) throw new Error(`memcached-operator lint failed, so no snapshot was built:\n${warm.stderr}`)

    const bundle = join(out, 'render.cjs')
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: [join(root, 'operator', 'snapshot', 'entry.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node22',
      outfile: bundle,
      metafile: true,
      logLevel: 'silent',
      // A CommonJS bundle has no import.meta: every bundled module that reads it sits two directories
      // below the project root (operator/cli, operator/render, operator/snapshot), like entry.ts.
      define: { 'import.meta.url': JSON.stringify(pathToFileURL(join(root, 'operator', 'snapshot', 'entry.ts')).href) },
      plugins: [
        {
          name: 'render-only',
          setup(b) {
            // The snapshot preloads what the render engine would load on demand.
            b.onResolve({ filter: /\/lazy-require\.ts$/ }, () => ({ path: join(root, 'operator', 'snapshot', 'preloaded-require.ts') }))
            // Only `render` runs from the snapshot: the other commands stay out of it.
            b.onResolve({ filter: /^\.\/(lint|crd|run|diff|sandbox)\.ts$/ }, (a) => ({ path: a.path, external: true }))
            // Built-in modules that `render` seldom or never calls (a name's hash suffix; commander's
            // executable subcommands) load on first use: in the snapshot they would cost start-up time.
            b.onResolve({ filter: /^node:(crypto|child_process)$/ }, (a) => ({ path: a.path, namespace: 'lazy-builtin' }))
            b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (a) => ({ loader: 'js', contents: lazyBuiltin(a.path) }))
          },
        },
      ],
    })
    // The bundle, this script, and package.json (the snapshot holds its version, for --version).
    const inputs = [...Object.keys(result.metafile.inputs).map((f) => resolve(root, f)), fileURLToPath(import.meta.url), join(root, 'package.json')]
    const inputsFile = join(out, 'inputs.json')
    writeFileSync(inputsFile, JSON.stringify(inputs))

    const blob = join(out, 'render.blob')
    const r = spawnSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, MEMCACHED_OPERATOR_SNAPSHOT_INPUTS: inputsFile, MEMCACHED_OPERATOR_DEBUG_START: '' },
    })
    if (r.status !== 0) throw new Error(`node --build-snapshot failed:\n${r.stderr}`)
    try {
      linkSync(process.execPath, join(out, 'node'))
    } catch (err) {
      throw new CannotBuild(`cannot hard-link ${process.execPath} into ${out} (${(err as NodeJS.ErrnoException).code}): the snapshot must name the node that built it`)
    }
    if (!process.env.MEMCACHED_OPERATOR_SNAPSHOT_KEEP) rmSync(bundle)
    if (!process.env.MEMCACHED_OPERATOR_SNAPSHOT_KEEP) rmSync(inputsFile)
    previous = readlinkOrUndefined(join(dir, 'current'))
    const next = join(dir, `current.${process.pid}`)
    symlinkSync(out.slice(dir.length + 1), next)
    renameSync(next, join(dir, 'current'))
  } catch (err) {
    if (!process.env.MEMCACHED_OPERATOR_SNAPSHOT_KEEP) rmSync(out, { recursive: true, force: true })
    throw err
  }
  // The previous build stays: a `render` that found it an instant before the swap still opens it.
  for (const old of readdirSync(dir)) {
    if (old.startsWith('build-') && join(dir, old) !== out && old !== previous) rmSync(join(dir, old), { recursive: true, force: true })
  }
  return join(out, 'render.blob')
}

if (process.env.MEMCACHED_OPERATOR_SNAPSHOT === 'off') {
  say('not built (MEMCACHED_OPERATOR_SNAPSHOT=off)')
} else {
  const dir = snapshotDir()
  const started = performance.now()
  try {
    try {
      mkdirSync(dir, { recursive: true })
    } catch (err) {
      throw new CannotBuild(`cannot create ${dir} (${(err as NodeJS.ErrnoException).code}), so render starts from the sources`)
    }
    const lockFile = join(dir, 'build.lock')
    if (!lock(lockFile)) {
      say('another build is running')
    } else {
      try {
        const blob = await build(dir)
        say(`${(statSync(blob).size / 1e6).toFixed(1)} MB, built in ${((performance.now() - started) / 1000).toFixed(1)} s: ${blob}`)
      } finally {
        rmSync(lockFile, { force: true })
      }
    }
  } catch (err) {
    if (!(err instanceof CannotBuild) || !ifPossible) {
      process.stderr.write(`render snapshot: ${(err as Error).message}\n`)
      process.exitCode = 1
    } else {
      say(`not built: ${err.message}`)
    }
  }
}
