/**
 * `npm run bench:memcached-memory [MB…]`: what the real memcached uses beyond `-m`, the figures
 * behind the chart's memory model (charts/memcached/templates/_memory.ejs). For each size it fills
 * a cache with the smallest items (10-byte keys and values, the most items and so the largest hash
 * table a cache of that size can hold) until it evicts, and reads the process's resident and peak
 * memory; then the cost of idle plain and TLS connections (BENCH_CONNS, 500), and of extstore.
 * Prints figures; asserts nothing. Needs the memcached binary (test/support/memcached.ts).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { plain, stats, tls, type Conn } from '../support/memcached-client.ts'
import { memcachedVersion, rss, running, startArgs, type Memcached } from '../support/memcached.ts'

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0)
const conns = Number(process.env.BENCH_CONNS ?? 500)
const MiB = 1024

async function fill(mc: Memcached, mb: number): Promise<Record<string, string>> {
  const conn = await plain(mc.port)
  const chunk = 20_000
  let i = 0
  for (;;) {
    let batch = ''
    for (let j = 0; j < chunk; j++, i++) batch += `set k${String(i).padStart(9, '0')} 0 0 10 noreply\r\nxxxxxxxxxx\r\n`
    await conn.command(batch + 'version\r\n')
    if (i % 200_000 === 0) {
      const st = await stats(conn)
      // Full: it evicts; go on for a fifth more so that the hash table has seen every item it will hold.
      if (Number(st.evictions) > 0 && i > Number(st.curr_items) * 1.2) break
    }
    if (i > mb * 40_000) break
  }
  for (let k = 0; k < 100; k++) {
    const st = await stats(conn)
    if (st.hash_is_expanding === '0') break
    await new Promise((r) => setTimeout(r, 100))
  }
  const st = await stats(conn)
  conn.close()
  return st
}

async function memoryOf(mb: number): Promise<void> {
  const mc = running(await startArgs(['-m', String(mb), '-c', '1024']))
  try {
    const start = rss(mc.pid)
    const st = await fill(mc, mb)
    await new Promise((r) => setTimeout(r, 500))
    const end = rss(mc.pid)
    const over = (kib: number) => (kib / MiB - mb).toFixed(1)
    console.log(`-m ${String(mb).padStart(5)}: ${st.curr_items} items, hash ${Number(st.hash_bytes) / 2 ** 20} MiB (power ${st.hash_power_level}); RSS at start ${(start.rss / MiB).toFixed(1)} MiB; full: RSS = memoryMB + ${over(end.rss)} MiB, peak = memoryMB + ${over(end.peak)} MiB`)
  } finally {
    await mc.stop()
  }
}

async function connectionsOf(useTls: boolean): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mc-bench-'))
  const args = ['-m', '64', '-c', String(conns + 100)]
  if (useTls) {
    spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', join(dir, 'tls.key'), '-out', join(dir, 'tls.crt')], { stdio: 'ignore' })
    spawnSync('chmod', ['-R', 'a+rX', dir])
    args.push('-Z', '-o', `ssl_chain_cert=${join(dir, 'tls.crt')},ssl_key=${join(dir, 'tls.key')}`)
  }
  const mc = running(await startArgs(args))
  const open: Conn[] = []
  try {
    const base = rss(mc.pid).rss
    for (let i = 0; i < conns; i++) {
      const c = useTls ? await tls(mc.port) : await plain(mc.port)
      await c.command('version\r\n')
      open.push(c)
    }
    await new Promise((r) => setTimeout(r, 500))
    const after = rss(mc.pid).rss
    console.log(`${conns} idle ${useTls ? 'TLS  ' : 'plain'} connections: RSS ${(base / MiB).toFixed(1)} -> ${(after / MiB).toFixed(1)} MiB, ${((after - base) / conns).toFixed(1)} KiB each`)
  } finally {
    for (const c of open) c.close()
    await mc.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A 64 MB cache with a 512 MB extstore file and write buffers of `wbuf` MB (ext_wbuf_size), 600-byte
 * values (written to the file) until it has cycled through it.
 */
async function extstoreOf(wbuf: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mc-bench-'))
  spawnSync('chmod', ['777', dir])
  const mc = running(await startArgs(['-m', '64', '-c', '1024', '-o', `ext_wbuf_size=${wbuf},ext_path=${dir}/extstore:512M`]))
  try {
    const conn = await plain(mc.port)
    const v = 'x'.repeat(600)
    for (let i = 0; i < 1_500_000; ) {
      let batch = ''
      for (let j = 0; j < 5000; j++, i++) batch += `set k${String(i).padStart(9, '0')} 0 0 600 noreply\r\n${v}\r\n`
      await conn.command(batch + 'version\r\n')
    }
    const st = await stats(conn)
    conn.close()
    const end = rss(mc.pid)
    console.log(`-m 64 with extstore (512M, ext_wbuf_size ${wbuf}, 600-byte values): ${st.curr_items} items, ${st.extstore_objects_used} on the file; RSS = memoryMB + ${(end.rss / MiB - 64).toFixed(1)} MiB, peak + ${(end.peak / MiB - 64).toFixed(1)} MiB`)
  } finally {
    await mc.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(`memcached ${memcachedVersion()}`)
for (const mb of sizes.length > 0 ? sizes : [64, 256, 1024]) await memoryOf(mb)
await connectionsOf(false)
await connectionsOf(true)
for (const wbuf of [4, 8]) await extstoreOf(wbuf)
