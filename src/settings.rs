// SPDX-License-Identifier: GPL-2.0

//! A target's settings: one table ([`for_each_setting!`]), one row per setting, that
//! drives the configfs attributes (`configfs.rs`: parse, show, refuse while enabled), the
//! [`TargetSettings`] struct with its defaults, and what the disk and the transport read
//! (they take the struct as it is, not field by field). rswapctl has the same table for
//! its target files and flags (`tools/rswapctl/src/settings.rs`); `scripts/settings.py`
//! checks that the two agree.
//!
//! A row: `{ id, name: type = default, parse, show, live, "doc" }`:
//! - `id`: the configfs attribute's number (unique among the target's attributes);
//! - `name`: the attribute and the field;
//! - `default`: its value when the target directory is made;
//! - `parse`: the text written to the attribute to the value ([`row`]);
//! - `show`: the value to the attribute's text ([`row`]);
//! - `live`: whether it may change while the target is enabled (else `EBUSY`).

use crate::ib::Devices;
use row::{Code, Secret, SecretList, ServerList, SockAddr};

/// What the module hands to every target it configures.
#[derive(Clone, Copy)]
pub(crate) struct ModuleContext {
    /// Where a target's connections find their RDMA device's object (the IB client).
    pub(crate) devices: &'static dyn Devices,
    /// Whether encrypted targets open their reads in a workqueue (the `crypt_workqueue`
    /// module parameter).
    pub(crate) crypt_workqueue: bool,
}

/// Calls macro `$m` with every row of the table, in the order of
/// Documentation/configuration.md. The rows' functions and types are those of [`row`].
macro_rules! for_each_setting {
    ($m:ident) => {
        $m! {
            { 0, addr: Option<SockAddr> = None, host, unset, false,
                "The server's address (its port is `port`)." }
            { 15, src_addr: Option<SockAddr> = None, host_or_any, any, false,
                "The address to connect from; `None`: whichever the routing picks." }
            { 1, port: u16 = 7471, |t| ranged(t, 1, 65535), plain, false,
                "The server's port." }
            { 2, size: Option<u64> = None, size, unset, false,
                "Bytes of remote memory, the disk's capacity." }
            { 3, queues: u16 = cpus(), |t| ranged(t, 1, 64), plain, false,
                "Hardware queues, one connection each." }
            { 4, queue_depth: u32 = 128, |t| ranged(t, 1, 1024), plain, false,
                "Requests in flight per queue." }
            { 18, poll_queues: u16 = 0, |t| ranged(t, 0, 63), plain, false,
                "Hardware queues for polled I/O only, after `queues`, one connection each." }
            { 5, client_id: u64 = random(), client_id, hex, false,
                "This client's identity towards the server." }
            { 13, secret: Option<Secret> = None, secret, set_or_unset, false,
                "The secret the target authenticates with, if it has one (hex digits or a logon key)." }
            { 20, code: Code = Code::PLAIN, code, plain, false,
                "The erasure code K+R of a disk over k + r servers (`servers`); 1+0: one server." }
            { 21, servers: ServerList = ServerList::EMPTY, servers, servers_shown, false,
                "The disk's servers in leg order, instead of `addr` (a port each, else `port`)." }
            { 22, secrets: SecretList = SecretList::EMPTY, secrets, secrets_shown, false,
                "A secret for each server of `servers` (`-`: that server takes `secret`)." }
            { 6, timeout_ms: u32 = 5000, |t| ranged(t, 100, 120_000), plain, false,
                "Milliseconds each connection step may take." }
            { 10, recovery_ms: u32 = 60000, |t| ranged(t, 0, 3_600_000), plain, false,
                "Milliseconds a failed queue may spend reconnecting; 0 turns recovery off." }
            { 11, keepalive_ms: u32 = 5000, keepalive_ms, plain, false,
                "Milliseconds between keep-alive probes of each queue; 0 turns them off." }
            { 19, io_timeout_ms: u32 = 30000, |t| ranged(t, 100, 3_600_000), plain, false,
                "Milliseconds a request may take before it times out and its queue recovers." }
            { 16, encrypt: bool = false, boolean, flag, false,
                "Whether the disk seals every page before it leaves the host." }
            { 17, sync_swapin: bool = false, boolean, flag, false,
                "Whether the disk is synchronous: swap reads pages back without readahead." }
            { 23, extra_reads: u8 = 1, |t| ranged(t, 0, 2), plain, false,
                "Parity fragments a read asks for beyond k, so it can end without its slowest server." }
            { 24, rebuild_mbps: u32 = 200, |t| ranged(t, 1, 100_000), plain, true,
                "MiB/s a server's rebuild writes at most." }
        }
    };
}
pub(crate) use for_each_setting;

/// The functions the rows of [`for_each_setting!`] name: parsers (text to value) and
/// shown forms (value to text).
pub(crate) mod row {
    use core::fmt::{self, Display, Write};
    use kernel::{alloc::flags::GFP_KERNEL, alloc::KVec, sync::Arc};

    use crate::config_parse::{self as parse, Invalid};
    use crate::kernel_ext::{self, BadAddr};
    // The rows' types.
    pub(crate) use crate::config_parse::Code;
    pub(crate) use crate::config_parse::Secret;
    use crate::config_parse::MAX_SERVERS;
    pub(crate) use crate::kernel_ext::SockAddr;

    /// The servers of a disk over several (`servers`), in leg order: an address each, with
    /// the port its entry gave, if any (else the `port` row's). On the heap (1.4 KiB for
    /// 10 addresses), shared by the copies of a target's settings: a copy on the stack is
    /// a pointer, where enable's call chain keeps several. Built on the heap too, entry by
    /// entry: a whole list on the stack made a store of `servers` take 4 KiB of it.
    #[derive(Clone)]
    pub(crate) struct ServerList(Option<Arc<ServerEntries>>);

    /// The entries of a [`ServerList`].
    pub(crate) struct ServerEntries {
        entries: KVec<Option<(SockAddr, Option<u16>)>>,
    }

    impl ServerList {
        /// No server: the target uses `addr`.
        pub(crate) const EMPTY: Self = Self(None);

        /// Servers in the list.
        pub(crate) fn len(&self) -> usize {
            self.0.as_ref().map_or(0, |e| e.entries.len())
        }

        /// Whether the list is empty.
        pub(crate) fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Server `i`'s address and the port its entry gave, if it gave one.
        pub(crate) fn entry(&self, i: usize) -> Option<(SockAddr, Option<u16>)> {
            *self.0.as_ref()?.entries.get(i)?
        }

        /// The list with entry `i` naming `addr` and `port` instead: a leg's server
        /// replaced while the disk is enabled.
        pub(crate) fn with_entry(
            &self,
            i: usize,
            addr: SockAddr,
            port: Option<u16>,
        ) -> Result<Self, Invalid> {
            let mut entries = entries()?;
            for j in 0..self.len() {
                let e = if j == i {
                    Some((addr, port))
                } else {
                    self.entry(j)
                };
                entries.push(e, GFP_KERNEL).map_err(|_| OUT_OF_MEMORY)?;
            }
            if i >= self.len() {
                return Err(Invalid("no such server in the list"));
            }
            Ok(Self(Some(shared(ServerEntries { entries })?)))
        }

        /// The first two entries that name the same server (address and port, `port`
        /// where an entry gives none), and that server.
        pub(crate) fn repeated(&self, port: u16) -> Option<(usize, usize, SockAddr)> {
            let at = |i| self.entry(i).map(|(a, p)| a.with_port(p.unwrap_or(port)));
            (0..self.len()).find_map(|j| {
                let b = at(j)?;
                (0..j).find(|&i| at(i) == Some(b)).map(|i| (i, j, b))
            })
        }
    }

    /// A secret for each server of a disk over several (`secrets`); `None`: that server
    /// takes the target's `secret`. On the heap, as [`ServerList`].
    #[derive(Clone)]
    pub(crate) struct SecretList(Option<Arc<SecretEntries>>);

    /// The entries of a [`SecretList`].
    pub(crate) struct SecretEntries {
        entries: KVec<Option<Secret>>,
    }

    impl SecretList {
        /// No list: every server takes `secret`.
        pub(crate) const EMPTY: Self = Self(None);

        /// Entries in the list (0: none given).
        pub(crate) fn len(&self) -> usize {
            self.0.as_ref().map_or(0, |e| e.entries.len())
        }

        /// Server `i`'s own secret, if the list gives one.
        pub(crate) fn get(&self, i: usize) -> Option<&Secret> {
            self.0.as_ref()?.entries.get(i)?.as_ref()
        }
    }

    /// `value` on the heap, shared.
    fn shared<T>(value: T) -> Result<Arc<T>, Invalid> {
        Arc::new(value, GFP_KERNEL).map_err(|_| OUT_OF_MEMORY)
    }

    const OUT_OF_MEMORY: Invalid = Invalid("out of memory");

    /// Room for the entries of a list (at most [`MAX_SERVERS`]), on the heap.
    fn entries<T>() -> Result<KVec<T>, Invalid> {
        KVec::with_capacity(MAX_SERVERS, GFP_KERNEL).map_err(|_| OUT_OF_MEMORY)
    }

    /// Most connections (queues and poll queues) one target opens: the server's default
    /// limit of queues per client.
    pub(crate) const MAX_CONNECTIONS: u32 = 64;

    /// A decimal number in `min..=max`, of the field's type.
    pub(crate) fn ranged<T: TryFrom<u64>>(t: &str, min: u64, max: u64) -> Result<T, Invalid> {
        T::try_from(parse::number(t, min, max)?).map_err(|_| Invalid("number out of range"))
    }

    /// The address of one host, as nvme-rdma takes `traddr`: a dotted quad, or IPv6 with
    /// an optional `%scope` (an interface name or number).
    pub(crate) fn host(t: &str) -> Result<Option<SockAddr>, Invalid> {
        SockAddr::parse(t).map(Some).map_err(|e| match e {
            BadAddr::Syntax => Invalid("not an IPv4 or IPv6 address"),
            BadAddr::NotAHost => {
                Invalid("not the address of one host (any, broadcast or multicast)")
            }
        })
    }

    /// [`host`], or `any`: none.
    pub(crate) fn host_or_any(t: &str) -> Result<Option<SockAddr>, Invalid> {
        match t {
            "any" => Ok(None),
            t => host(t),
        }
    }

    /// A size (see [`parse::size`]).
    pub(crate) fn size(t: &str) -> Result<Option<u64>, Invalid> {
        parse::size(t).map(Some)
    }

    /// A client id (see [`parse::client_id`]).
    pub(crate) fn client_id(t: &str) -> Result<u64, Invalid> {
        parse::client_id(t)
    }

    /// A keep-alive period (see [`parse::keepalive_ms`]).
    pub(crate) fn keepalive_ms(t: &str) -> Result<u32, Invalid> {
        parse::keepalive_ms(t)
            .and_then(|v| u32::try_from(v).map_err(|_| Invalid("number out of range")))
    }

    /// A secret in hexadecimal digits, `none`, or `key:DESCRIPTION`: the payload of the
    /// `logon` key of that description in the writer's keyrings, which never passes
    /// through the configfs write page (see [`parse::key_description`]).
    pub(crate) fn secret(t: &str) -> Result<Option<Secret>, Invalid> {
        match (t, parse::key_description(t)) {
            (_, Some(desc)) => logon_key(desc?).map(Some),
            ("none", None) => Ok(None),
            (hex, None) => parse::secret(hex).map(Some),
        }
    }

    /// The secret that the payload of the `logon` key `desc` holds, copied straight into
    /// the secret's own buffer.
    fn logon_key(desc: &str) -> Result<Secret, Invalid> {
        Secret::read(|buf| kernel_ext::read_logon_key(desc, buf).map_err(|e| Invalid(e.reason())))
    }

    /// A code `K+R` (see [`Code::parse`]).
    pub(crate) fn code(t: &str) -> Result<Code, Invalid> {
        Code::parse(t)
    }

    /// A comma-separated list of servers (see [`parse::server_entry`]), or `none`.
    pub(crate) fn servers(t: &str) -> Result<ServerList, Invalid> {
        if t == "none" {
            return Ok(ServerList::EMPTY);
        }
        let mut entries = entries()?;
        for entry in parse::list(t)? {
            let (text, port) = parse::server_entry(entry)?;
            entries
                .push(host(text)?.map(|a| (a, port)), GFP_KERNEL)
                .map_err(|_| OUT_OF_MEMORY)?;
        }
        Ok(ServerList(Some(shared(ServerEntries { entries })?)))
    }

    /// A comma-separated list of secrets, each as [`secret`] takes it or `-` (that server
    /// takes `secret`), or `none`: no list.
    pub(crate) fn secrets(t: &str) -> Result<SecretList, Invalid> {
        if t == "none" {
            return Ok(SecretList::EMPTY);
        }
        let mut entries = entries()?;
        for entry in parse::list(t)? {
            let one = match entry {
                "-" => None,
                "none" => return Err(Invalid("a server with no secret of its own is '-'")),
                e => secret(e)?,
            };
            entries.push(one, GFP_KERNEL).map_err(|_| OUT_OF_MEMORY)?;
        }
        Ok(SecretList(Some(shared(SecretEntries { entries })?)))
    }

    /// The servers as `servers` takes them, or `(none)`.
    pub(crate) fn servers_shown(v: &ServerList, w: &mut impl Write) -> fmt::Result {
        if v.is_empty() {
            return writeln!(w, "(none)");
        }
        for i in 0..v.len() {
            let sep = if i == 0 { "" } else { "," };
            match v.entry(i) {
                Some((a, Some(p))) => write!(w, "{}{}", sep, a.with_port(p).with_port_shown())?,
                Some((a, None)) => write!(w, "{}{}", sep, a)?,
                None => {}
            }
        }
        writeln!(w)
    }

    /// Whether each entry is set (`(set)`) or `-`, never a secret; `(none)` for no list.
    pub(crate) fn secrets_shown(v: &SecretList, w: &mut impl Write) -> fmt::Result {
        if v.len() == 0 {
            return writeln!(w, "(none)");
        }
        for i in 0..v.len() {
            let sep = if i == 0 { "" } else { "," };
            write!(
                w,
                "{}{}",
                sep,
                if v.get(i).is_some() { "(set)" } else { "-" }
            )?;
        }
        writeln!(w)
    }

    /// `0`/`1` (see [`parse::boolean`]).
    pub(crate) fn boolean(t: &str) -> Result<bool, Invalid> {
        parse::boolean(t)
    }

    /// The value as it is.
    pub(crate) fn plain<T: Display>(v: &T, w: &mut impl Write) -> fmt::Result {
        writeln!(w, "{}", v)
    }

    /// The value, or `(unset)`.
    pub(crate) fn unset<T: Display>(v: &Option<T>, w: &mut impl Write) -> fmt::Result {
        match v {
            Some(v) => writeln!(w, "{}", v),
            None => writeln!(w, "(unset)"),
        }
    }

    /// The value, or `(any)`.
    pub(crate) fn any<T: Display>(v: &Option<T>, w: &mut impl Write) -> fmt::Result {
        match v {
            Some(v) => writeln!(w, "{}", v),
            None => writeln!(w, "(any)"),
        }
    }

    /// In hexadecimal, `0x` first.
    pub(crate) fn hex(v: &u64, w: &mut impl Write) -> fmt::Result {
        writeln!(w, "{:#x}", v)
    }

    /// `1` or `0`.
    pub(crate) fn flag(v: &bool, w: &mut impl Write) -> fmt::Result {
        writeln!(w, "{}", u8::from(*v))
    }

    /// Whether it is set, never the value.
    pub(crate) fn set_or_unset<T>(v: &Option<T>, w: &mut impl Write) -> fmt::Result {
        writeln!(w, "{}", if v.is_some() { "(set)" } else { "(unset)" })
    }

    /// The number of possible CPUs, at most one queue each, 1..64.
    pub(crate) fn cpus() -> u16 {
        u16::try_from(crate::kernel_ext::nr_cpus().clamp(1, MAX_CONNECTIONS)).unwrap_or(1)
    }

    /// A random number other than 0.
    pub(crate) fn random() -> u64 {
        loop {
            let v = crate::kernel_ext::random_u64();
            if v != 0 {
                return v;
            }
        }
    }
}

macro_rules! settings_struct {
    ($({ $id:literal, $name:ident: $ty:ty = $default:expr, $parse:expr, $show:path, $live:literal,
        $doc:literal })*) => {
        /// A target's settings, as its configfs attributes hold them (see
        /// [`for_each_setting!`]).
        #[derive(Clone)]
        pub(crate) struct TargetSettings {
            $(#[doc = $doc] pub(crate) $name: $ty,)*
        }

        impl TargetSettings {
            /// The settings of a new target directory: every row's default.
            pub(crate) fn new() -> Self {
                use row::*;
                Self { $($name: $default,)* }
            }
        }
    };
}
for_each_setting!(settings_struct);

impl TargetSettings {
    /// The server's address with its port, once `addr` is set.
    pub(crate) fn server(&self) -> Option<SockAddr> {
        self.addr.map(|a| a.with_port(self.port))
    }

    /// The remote size in bytes (0 while `size` is unset: `enable` refuses that).
    pub(crate) fn bytes(&self) -> u64 {
        self.size.unwrap_or(0)
    }

    /// Connections in total: the queues and the poll queues.
    pub(crate) fn connections(&self) -> u32 {
        u32::from(self.queues) + u32::from(self.poll_queues)
    }

    /// [`Self::connections`] as a queue count (`enable` keeps it at most 64).
    pub(crate) fn queue_count(&self) -> u16 {
        self.queues.saturating_add(self.poll_queues)
    }
}

/// A random number other than 0 (a target's instance).
pub(crate) fn nonzero_random() -> u64 {
    row::random()
}
