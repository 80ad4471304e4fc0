/**
 * Builds the start-up snapshot of `render` (see entry.ts): `npm run snapshot`, or
 * `node operator/snapshot/build.ts [--quiet] [--if-possible]`. npm install runs it with
 * --if-possible (the `prepare` script): then no failure fails the install, it only says why there
 * is no snapshot. `render` runs it in the background when the snapshot it started from is out of
 * date.
 *
 * The snapshot goes to MEMCACHED_OPERATOR_SNAPSHOT_DIR (one directory per project; default
 * node_modules/.cache/memcached-operator) as `current` → `build-<ms>-<pid>/`, which holds
 * `render.blob`, `node` (a hard link to the node binary that built it, or a symbolic link where a
 * hard link is not allowed) and `node.stamp` (with that binary's modification time): a blob works
 * with that binary only, and the executable checks both before it uses the blob. `current` is
 * swapped atomically and the previous build is kept, so a concurrent `render` finds one or the
 * other. A failed build leaves `last-failure` (its reason), so that `render` does not start the
 * same failing build again until something changes. MEMCACHED_OPERATOR_SNAPSHOT_KEEP=1 keeps the
 * bundle and the list of its files beside the blob, for debugging.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, resolve, sep } from 'node:path'
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
const keep = Boolean(process.env.MEMCACHED_OPERATOR_SNAPSHOT_KEEP)

/** Where snapshots live (the executable computes the same default). */
function snapshotDir(): string {
  return resolve(process.env.MEMCACHED_OPERATOR_SNAPSHOT_DIR || join(root, 'node_modules', '.cache', 'memcached-operator'))
}

function say(line: string): void {
  if (!quiet) process.stderr.write(`render snapshot: ${line}\n`)
}

const BUILD = /^build-(\d+)-\d+$/
/** A file in each build directory, so that cleaning up removes ours only. */
const MARKER = '.memcached-operator-snapshot'
/** A stuck lint or snapshot build must not hang npm install. */
const TIMEOUT = 120_000
const LOCK_AGE = 120_000

/**
 * Takes the build lock (a file holding `token`), or returns false when another build holds it. A
 * lock older than two minutes was left by a build that died: it is renamed away first, which only
 * one of several concurrent builds can do.
 */
function lock(file: string, token: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, token, { flag: 'wx' })
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const st = statSync(file, { throwIfNoEntry: false })
      if (st && Date.now() - st.mtimeMs < LOCK_AGE) return false
      const stale = `${file}.stale.${process.pid}`
      try {
        renameSync(file, stale)
      } catch {
        return false
      }
      // Another build may have taken it over between the check and the rename: give a fresh lock back.
      const moved = statSync(stale, { throwIfNoEntry: false })
      if (moved && Date.now() - moved.mtimeMs < LOCK_AGE) {
        renameSync(stale, file)
        return false
      }
      rmSync(stale, { force: true })
    }
  }
  return false
}

function unlock(file: string, token: string): void {
  try {
    if (readFileSync(file, 'utf8') === token) rmSync(file, { force: true })
  } catch {
    // Already gone.
  }
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

/**
 * Every file and directory the snapshot depends on: the bundled files; for each bundled package,
 * its package.json and its directory and the node_modules directories above it (a package added or
 * removed there can change what the sources load); this script; package.json (the snapshot holds
 * its version, for --version) and tsconfig.json (esbuild reads it).
 */
function inputsOf(bundled: string[]): string[] {
  const out = new Set<string>(bundled)
  for (const file of bundled) {
    const parts = file.split(sep)
    for (let i = parts.lastIndexOf('node_modules'); i > 0; i = parts.lastIndexOf('node_modules', i - 1)) {
      const modules = parts.slice(0, i + 1).join(sep)
      const pkg = join(modules, ...(parts[i + 1]?.startsWith('@') ? parts.slice(i + 1, i + 3) : parts.slice(i + 1, i + 2)))
      out.add(modules)
      out.add(pkg)
      out.add(join(pkg, 'package.json'))
    }
  }
  out.add(fileURLToPath(import.meta.url))
  out.add(join(root, 'package.json'))
  out.add(join(root, 'tsconfig.json'))
  return [...out]
}

async function build(dir: string, startedAt: number): Promise<string> {
  let esbuild: typeof import('esbuild')
  try {
    esbuild = await import('esbuild')
  } catch {
    throw new Error('esbuild (a devDependency) is not installed')
  }
  const out = join(dir, `build-${startedAt}-${process.pid}`)
  let previous: string | undefined
  mkdirSync(out)
  writeFileSync(join(out, MARKER), '')
  try {
    // The validator of the bundled chart's schema must be in the on-disk cache: a snapshot cannot load ajv.
    const warm = spawnSync(process.execPath, [join(root, 'operator', 'cli', 'main.js'), 'lint'], { cwd: root, encoding: 'utf8', timeout: TIMEOUT })
    if (warm.status !== 0) throw new Error(`memcached-operator lint failed:\n${warm.stderr || warm.error?.message || warm.signal}`)

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
      plugins: [
        {
          name: 'render-only',
          setup(b) {
            // The snapshot preloads what the render engine would load on demand.
            b.onResolve({ filter: /\/lazy-require\.ts$/ }, () => ({ path: join(root, 'operator', 'snapshot', 'preloaded-require.ts') }))
            // Only `render` runs from the snapshot: every other command the command line imports stays out.
            b.onResolve({ filter: /^\.\/.*\.ts$/ }, (a) =>
              a.kind === 'dynamic-import' && a.importer === join(root, 'operator', 'cli', 'program.ts') && a.path !== './render.ts' ? { path: a.path, external: true } : undefined,
            )
            // commander's executable subcommands, which `render` never uses, load node:child_process.
            b.onResolve({ filter: /^node:child_process$/ }, (a) => ({ path: a.path, namespace: 'lazy-builtin' }))
            b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (a) => ({ loader: 'js', contents: lazyBuiltin(a.path) }))
            // A CommonJS bundle has no import.meta: each of our modules gets its own URL written in.
            b.onLoad({ filter: /\/operator\/.*\.ts$/ }, (a) => ({
              loader: 'ts',
              contents: readFileSync(a.path, 'utf8').replaceAll('import.meta.url', () => JSON.stringify(pathToFileURL(a.path).href)),
            }))
          },
        },
      ],
    })
    // An import.meta left empty, or anything else esbuild warns about, would be a wrong snapshot.
    if (result.warnings.length > 0) throw new Error(`esbuild: ${result.warnings.map((w) => `${w.location?.file ?? ''}: ${w.text}`).join('; ')}`)
    const inputsFile = join(out, 'inputs.json')
    // Files only: a plugin's namespaced module (`lazy-builtin:…`) is not one.
    const files = Object.keys(result.metafile.inputs).filter((f) => !/^[\w-]+:/.test(f))
    writeFileSync(inputsFile, JSON.stringify(inputsOf(files.map((f) => resolve(root, f)))))

    const blob = join(out, 'render.blob')
    const r = spawnSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], {
      cwd: root,
      encoding: 'utf8',
      timeout: TIMEOUT,
      env: { ...process.env, MEMCACHED_OPERATOR_SNAPSHOT_INPUTS: inputsFile, MEMCACHED_OPERATOR_DEBUG_START: '' },
    })
    if (r.status !== 0) throw new Error(`node --build-snapshot failed:\n${r.stderr || r.error?.message || r.signal}`)
    // The node that built the blob: a hard link names exactly that file; where one is not allowed
    // (another file system, or a node owned by another user), a symbolic link and the stamp's time.
    const node = realpathSync(process.execPath)
    try {
      linkSync(node, join(out, 'node'))
    } catch {
      symlinkSync(node, join(out, 'node'))
    }
    writeFileSync(join(out, 'node.stamp'), '')
    const touch = spawnSync('touch', ['-r', node, join(out, 'node.stamp')], { encoding: 'utf8' })
    if (touch.status !== 0) throw new Error(`touch -r ${node} failed: ${touch.stderr || touch.error?.message}`)
    // The executable compares the two times to the nanosecond: a file system that keeps coarser
    // times would make every render run from the sources, silently.
    if (statSync(join(out, 'node.stamp'), { bigint: true }).mtimeNs !== statSync(node, { bigint: true }).mtimeNs) {
      throw new Error(`the file system of ${dir} does not keep the modification time of ${node} exactly: choose another MEMCACHED_OPERATOR_SNAPSHOT_DIR`)
    }
    if (!keep) {
      rmSync(bundle)
      rmSync(inputsFile)
    }
    const current = join(dir, 'current')
    const st = lstatSync(current, { throwIfNoEntry: false })
    if (st && !st.isSymbolicLink()) throw new Error(`${current} exists and is not this tool's link: choose an empty MEMCACHED_OPERATOR_SNAPSHOT_DIR`)
    previous = readlinkOrUndefined(current)
    const next = join(dir, `current.${process.pid}`)
    rmSync(next, { force: true })
    symlinkSync(out.slice(dir.length + 1), next)
    renameSync(next, current)
  } catch (err) {
    if (!keep) rmSync(out, { recursive: true, force: true })
    throw err
  }
  // Older builds go; the previous one stays (a `render` may have found it an instant before the
  // swap), and so does anything that is not one of ours or that a newer build made.
  for (const name of readdirSync(dir)) {
    const m = BUILD.exec(name)
    if (m && Number(m[1]) < startedAt && name !== previous && existsSync(join(dir, name, MARKER))) rmSync(join(dir, name), { recursive: true, force: true })
  }
  return join(out, 'render.blob')
}

if (process.env.MEMCACHED_OPERATOR_SNAPSHOT === 'off') {
  say('not built (MEMCACHED_OPERATOR_SNAPSHOT=off)')
} else {
  const dir = snapshotDir()
  const startedAt = Date.now()
  const token = `${process.pid} ${startedAt}`
  const lockFile = join(dir, 'build.lock')
  let locked = false
  try {
    mkdirSync(dir, { recursive: true })
    locked = lock(lockFile, token)
    // npm run snapshot waits for a build that runs (a render's, in the background), then builds.
    for (const deadline = Date.now() + LOCK_AGE; !locked && !ifPossible && Date.now() < deadline; ) {
      await new Promise((ok) => setTimeout(ok, 200))
      locked = lock(lockFile, token)
    }
    if (!locked) {
      if (!ifPossible) throw new Error('another build has held the lock for two minutes')
      say('another build is running')
    } else {
      const blob = await build(dir, startedAt)
      rmSync(join(dir, 'last-failure'), { force: true })
      say(`${(statSync(blob).size / 1e6).toFixed(1)} MB, built in ${((Date.now() - startedAt) / 1000).toFixed(1)} s: ${blob}`)
    }
  } catch (err) {
    const reason = (err as Error).message
    try {
      writeFileSync(join(dir, 'last-failure'), `${new Date().toISOString()} ${reason}\n`)
    } catch {
      // A read-only install: nothing to remember it in.
    }
    if (ifPossible) {
      say(`not built, so render starts from the sources: ${reason}`)
    } else {
      process.stderr.write(`render snapshot: ${reason}\n`)
      process.exitCode = 1
    }
  } finally {
    if (locked) unlock(lockFile, token)
  }
}

