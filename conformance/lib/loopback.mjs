// Preloaded into the conformance CLI via NODE_OPTIONS=--import by run.sh.
//
// The suite's mock servers (client scenarios, the auth servers, the canary
// endpoint of json-schema-ref-no-deref, ...) call `listen(0)` without a host,
// which binds every interface. This pins every TCP listener that names no host
// to 127.0.0.1, so the conformance run never listens beyond loopback.
// The URLs the suite hands out still say "localhost", which resolves to
// 127.0.0.1 (clients fall back from ::1 immediately: nothing listens there).
import net from 'node:net';

const LOOPBACK = '127.0.0.1';
const listen = net.Server.prototype.listen;

function isPort(v) {
  return typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
}

net.Server.prototype.listen = function patchedListen(...args) {
  const first = args[0];
  if (args.length === 0 || first === undefined || first === null) {
    // listen() / listen(undefined, ...) -> random port
    args = [0, LOOPBACK, ...args.slice(1).filter((a) => a !== undefined)];
  } else if (typeof first === 'function') {
    // listen(callback)
    args = [0, LOOPBACK, ...args];
  } else if (isPort(first)) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] !== 'string') args.splice(1, 0, LOOPBACK);
  } else if (typeof first === 'object' && !(first instanceof net.Server)) {
    // listen(options[, callback]); leave pipes and handles alone
    const o = first;
    if (o.path === undefined && o.handle === undefined && o._handle === undefined &&
        o.fd === undefined && o.host === undefined) {
      args[0] = { ...o, host: LOOPBACK };
    }
  }
  return listen.apply(this, args);
};
