// The Node.js peers of bench/worker_throughput.py: graphile-worker and pg-boss, run exactly
// as the bench runs ours (it calls this script; see bench/node/README.md).
//
//   node peer.cjs setup SYSTEM SCHEMA N   install the queue's schema in SCHEMA and add N no-op
//                                          jobs in bulk (not timed), then exit
//   node peer.cjs work SYSTEM SCHEMA      run one worker process until SIGTERM (graceful stop)
//
// DATABASE_URL is the server; PGAPPNAME names this process's connections (node-postgres reads
// it), which is how the bench sees each worker waiting at its gate. SYSTEM is one of:
//   graphile_default     graphile-worker's run() with its defaults (concurrentJobs 1, no
//                        local queue, a completion per job)
//   graphile_throughput  its documented performance settings (worker.graphile.org/docs/performance):
//                        concurrentJobs 24, maxPoolSize 25, localQueue {size: 500},
//                        completeJobBatchDelay 0, failJobBatchDelay 0
//   pgboss_default       pg-boss's work() with its defaults (batchSize 1, a 2 s polling interval)
//   pgboss_batch         ten work() loops, each batchSize 100, pollingIntervalSeconds 0.5 (the
//                        shortest it allows)
"use strict";

const SYSTEMS = ["graphile_default", "graphile_throughput", "pgboss_default", "pgboss_batch"];
const QUEUE = "noop";

function usage(message) {
  process.stderr.write(`peer.cjs: ${message}\n`);
  process.exit(2);
}

const [mode, system, schema, count] = process.argv.slice(2);
if (!["setup", "work"].includes(mode) || !SYSTEMS.includes(system) || !/^[a-z_][a-z0-9_]*$/.test(schema || "")) {
  usage(`usage: node peer.cjs setup|work ${SYSTEMS.join("|")} SCHEMA [N]`);
}
const connectionString = process.env.DATABASE_URL;
if (!connectionString) usage("DATABASE_URL is not set");
// libpq takes the operating system's user name when the URL names none; node-postgres reads
// $USER, which a service or a container may not set.
if (!process.env.PGUSER && !process.env.USER) process.env.PGUSER = require("os").userInfo().username;

function graphilePreset() {
  const worker = { connectionString, schema, pollInterval: 2000 };
  if (system === "graphile_throughput") {
    Object.assign(worker, { concurrentJobs: 24, maxPoolSize: 25, localQueue: { size: 500 },
                            completeJobBatchDelay: 0, failJobBatchDelay: 0 });
  }
  return { worker };
}

async function graphile() {
  const gw = require("graphile-worker");
  const preset = graphilePreset();
  if (mode === "setup") {
    await gw.runMigrations({ preset });
    const utils = await gw.makeWorkerUtils({ preset });
    try {
      const n = Number(count);
      for (let start = 0; start < n; start += 5000) {
        const specs = [];
        for (let k = start; k < Math.min(n, start + 5000); k++) {
          specs.push({ identifier: QUEUE, payload: { n: k } });
        }
        await utils.addJobs(specs);
      }
    } finally {
      await utils.release();
    }
    return;
  }
  const runner = await gw.run({
    preset,
    noHandleSignals: true,
    taskList: { [QUEUE]: async () => {} },
  });
  const stop = () => { runner.stop().then(() => process.exit(0), () => process.exit(1)); };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  await runner.promise;
}

async function pgboss() {
  const { PgBoss } = loadPgBoss();
  const boss = new PgBoss({ connectionString, schema, application_name: process.env.PGAPPNAME || "pgboss" });
  boss.on("error", (err) => process.stderr.write(`pg-boss error: ${err.message}\n`));
  await boss.start();
  if (mode === "setup") {
    await boss.createQueue(QUEUE);
    const n = Number(count);
    for (let start = 0; start < n; start += 5000) {
      const jobs = [];
      for (let k = start; k < Math.min(n, start + 5000); k++) jobs.push({ name: QUEUE, data: { n: k } });
      await boss.insert(jobs);
    }
    await boss.stop({ graceful: true, wait: true });
    return;
  }
  const handler = async () => {};
  if (system === "pgboss_default") {
    await boss.work(QUEUE, handler);
  } else {
    for (let k = 0; k < 10; k++) await boss.work(QUEUE, { batchSize: 100, pollingIntervalSeconds: 0.5 }, handler);
  }
  const stop = () => { boss.stop({ graceful: true, wait: true }).then(() => process.exit(0), () => process.exit(1)); };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

function loadPgBoss() {
  const mod = require("pg-boss");
  return { PgBoss: mod.PgBoss || mod.default || mod };
}

(system.startsWith("graphile") ? graphile() : pgboss()).catch((err) => {
  process.stderr.write(`peer.cjs: ${err.stack || err}\n`);
  process.exit(1);
});
