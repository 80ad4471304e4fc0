/**
 * Builds the start-up snapshot of `render` (see entry.ts): `npm run snapshot`, or
 * `node operator/snapshot/build.ts [--quiet] [--if-possible]`. npm install runs it with
 * --if-possible (the `prepare` script): then no failure fails the install, it only says why there
 * is no snapshot; under npm ci (a clean install for CI or an image) it builds nothing. Nothing else starts it: a `render` that finds the snapshot out of date runs from
 * the sources and says so.
 *
 * The snapshot goes to MEMCACHED_OPERATOR_SNAPSHOT_DIR (one directory per project; default
 * node_modules/.cache/memcached-operator) as `current` → `build-<ms>-<pid>/`, which holds `render`
 * (a copy of the node binary that built it with the snapshot injected: node's single executable
 * application, which maps the snapshot with the program instead of reading it from a file at every
 * start), `node` (a hard link to that node binary, or a symbolic link where a hard link is not
 * allowed; it runs the sources when the snapshot cannot) and `node.stamp` (with that binary's
 * modification time): the executable uses the snapshot only while `node` on the PATH is that very
 * binary. `current` is swapped atomically and the previous build is kept, so a concurrent `render`
 * finds one or the other. A failed build leaves `last-failure` (its reason), so that `render` does
 * not start the same failing build again until something changes.
 * MEMCACHED_OPERATOR_SNAPSHOT_KEEP=1 keeps the bundle, the list of its files and the snapshot blob
 * beside the executable, for debugging.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
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
/** The fuse node's single executable applications look for (node's documentation gives it). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'
/** The node options the executable starts with (see the build's configuration). */
const EXEC_ARGV = ['--v8-pool-size=1', '--min-semi-space-size=4']
/** A stuck lint or snapshot build must not hang npm install. */
const TIMEOUT = 120_000
/** A build refreshes its lock between steps, each of which takes at most TIMEOUT. */
const LOCK_AGE = 2 * TIMEOUT

/**
 * Takes the build lock (a file holding `token`), or returns false when another build holds it. A
 * lock older than four minutes was left by a build that died: it is renamed away first, which only
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

/** Refreshes the lock between the steps of a build; throws when a build that took this one for dead has taken it over. */
function refresh(file: string, token: string): void {
  let held: string | undefined
  try {
    held = readFileSync(file, 'utf8')
  } catch {
    held = undefined
  }
  if (held !== token) throw new Error('another build took the lock over: this one was taken for dead')
  const now = new Date()
  utimesSync(file, now, now)
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

/** Strips the colours postject writes. */
const plain = (text: string): string => text.replace(/\x1b\[[0-9;]*m/g, '').trim()

async function build(dir: string, startedAt: number, stillLocked: () => void): Promise<{ executable: string; snapshotBytes: number }> {
  // node looks for the snapshot elsewhere in a macOS or Windows executable, which must then be signed again.
  if (process.platform !== 'linux') throw new Error(`the snapshot's executable is built on Linux only, not on ${process.platform}`)
  let esbuild: typeof import('esbuild')
  try {
    esbuild = await import('esbuild')
  } catch {
    throw new Error('esbuild (a devDependency) is not installed')
  }
  let postject: string
  try {
    postject = createRequire(import.meta.url).resolve('postject/dist/cli.js')
  } catch {
    throw new Error('postject (a devDependency) is not installed')
  }
  const current = join(dir, 'current')
  const st = lstatSync(current, { throwIfNoEntry: false })
  if (st && !st.isSymbolicLink()) throw new Error(`${current} exists and is not this tool's link: choose an empty MEMCACHED_OPERATOR_SNAPSHOT_DIR`)
  const out = join(dir, `build-${startedAt}-${process.pid}`)
  const executable = join(out, 'render')
  let snapshotBytes = 0
  let previous: string | undefined
  mkdirSync(out)
  writeFileSync(join(out, MARKER), '')
  try {
    // The validator of the bundled chart's schema must be in the on-disk cache: a snapshot cannot load ajv.
    const warm = spawnSync(process.execPath, [join(root, 'operator', 'cli', 'main.js'), 'lint'], { cwd: root, encoding: 'utf8', timeout: TIMEOUT })
    if (warm.status !== 0) throw new Error(`memcached-operator lint failed:\n${warm.stderr || warm.error?.message || warm.signal}`)
    stillLocked()

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

    // node builds the snapshot (running the bundle) into a blob for a single executable application.
    const blob = join(out, 'render.blob')
    const config = join(out, 'sea.json')
    // Node options for a command of some 60 ms, measured on two cores. One V8 worker thread, not
    // four: node starts its workers, and waits for them, before it runs anything (~4 ms). A young
    // generation of 4 MB from the start: a render allocates 2–3 MB, which would otherwise cost two
    // scavenges (~1.5 ms).
    writeFileSync(config, JSON.stringify({ main: bundle, output: blob, useSnapshot: true, disableExperimentalSEAWarning: true, execArgv: EXEC_ARGV }))
    const r = spawnSync(process.execPath, ['--experimental-sea-config', config], {
      cwd: root,
      encoding: 'utf8',
      timeout: TIMEOUT,
      env: { ...process.env, MEMCACHED_OPERATOR_SNAPSHOT_INPUTS: inputsFile, MEMCACHED_OPERATOR_DEBUG_START: '' },
    })
    if (r.status !== 0 || !existsSync(blob)) throw new Error(`node --experimental-sea-config (the snapshot) failed:\n${r.stderr || r.error?.message || r.signal}`)
    stillLocked()
    // …and postject (node's own injector) puts it into a copy of node. It says why it failed on
    // stdout; the rest of what it writes is noise.
    const node = realpathSync(process.execPath)
    snapshotBytes = statSync(blob).size
    copyFileSync(node, executable)
    chmodSync(executable, 0o755)
    const inject = spawnSync(process.execPath, [postject, executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], { encoding: 'utf8', timeout: TIMEOUT })
    if (inject.status !== 0) throw new Error(`postject failed:\n${plain(`${inject.stdout ?? ''}\n${inject.stderr ?? ''}`) || inject.error?.message || inject.signal}`)
    stillLocked()
    // The node that built the executable: a hard link names exactly that file; where one is not
    // allowed (another file system, or a node owned by another user), a symbolic link and the stamp's time.
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
    // The executable must start the snapshot it holds before any render depends on it. Rebuilds
    // off: were the snapshot out of date already (a source edited during the build), this run
    // would otherwise start another build.
    const smoke = spawnSync(executable, [node, join(root, 'operator', 'cli', 'memcached-operator'), 'render', '--version'], {
      cwd: root,
      encoding: 'utf8',
      timeout: TIMEOUT,
      // Without NODE_OPTIONS: a test runner's preloads, say, are not what is being checked.
      env: { ...process.env, NODE_OPTIONS: '', MEMCACHED_OPERATOR_SNAPSHOT: 'off', MEMCACHED_OPERATOR_DEBUG_START: '1' },
    })
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version
    if (smoke.status !== 0 || smoke.stdout.trim() !== version || !smoke.stderr.includes('started from the render snapshot')) {
      throw new Error(`the executable does not start from its snapshot (render --version: status ${smoke.status ?? smoke.signal ?? smoke.error?.message}):\n${smoke.stderr.trim()}`)
    }
    if (!keep) for (const file of [bundle, inputsFile, blob, config]) rmSync(file)
    // A build that held the lock for longer than a stale lock's age may have been taken for dead
    // and removed by a newer one.
    stillLocked()
    if (!existsSync(join(out, MARKER))) throw new Error(`${out} was removed during the build`)
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
  return { executable, snapshotBytes }
}

if (process.env.MEMCACHED_OPERATOR_SNAPSHOT === 'off') {
  say('not built (MEMCACHED_OPERATOR_SNAPSHOT=off)')
} else if (ifPossible && process.env.npm_command === 'ci') {
  // npm ci is the clean install of CI and of image builds, where nobody runs render by hand: the
  // build would cost every such install its time and disk for nothing (docs/benchmarks.md).
  say('not built by npm ci (npm install, or npm run snapshot, builds it)')
} else {
  const dir = snapshotDir()
  const startedAt = Date.now()
  const token = `${process.pid} ${startedAt}`
  const lockFile = join(dir, 'build.lock')
  let locked = false
  try {
    mkdirSync(dir, { recursive: true })
    locked = lock(lockFile, token)
    // npm run snapshot waits for a build that runs (another npm install's, say), then builds.
    for (const deadline = Date.now() + LOCK_AGE; !locked && !ifPossible && Date.now() < deadline; ) {
      await new Promise((ok) => setTimeout(ok, 200))
      locked = lock(lockFile, token)
    }
    if (!locked) {
      if (!ifPossible) throw new Error('another build has held the lock for four minutes')
      say('another build is running')
    } else {
      const { executable, snapshotBytes } = await build(dir, startedAt, () => refresh(lockFile, token))
      rmSync(join(dir, 'last-failure'), { force: true })
      say(`${(snapshotBytes / 1e6).toFixed(1)} MB, built in ${((Date.now() - startedAt) / 1000).toFixed(1)} s into ${executable}`)
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

