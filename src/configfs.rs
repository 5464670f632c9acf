// SPDX-License-Identifier: GPL-2.0

//! Configuration through configfs, like nvmet and rnull:
//!
//! ```text
//! mkdir /sys/kernel/config/rswap/NAME
//! echo 192.0.2.2 > addr; echo 7471 > port; echo 256M > size
//! echo 1 > enable          # connect and create /dev/rswapN
//! cat state device         # what it is doing, which disk it made
//! echo 0 > enable          # tear down (refused while the disk is open)
//! ```
//!
//! While the disk is open (swapon, a mount, a process), `echo 0 > enable` fails with
//! `EBUSY` (the disk counts its openers and shuts its door against new ones before it is
//! deleted). While a target is enabled, `rmdir` of its directory fails with `EBUSY`: an
//! enabled target holds a configfs dependency on its own directory ([`ItemDependency`]).
//!
//! Every attribute validates its value and refuses a bad one with `-EINVAL` and a message
//! in the kernel log; attributes are read-only (`-EBUSY`) while enabled. The last such
//! message (of any refusal, a failed `enable` too) is also in the read-only `last_error`,
//! so that a tool can show the reason without reading the kernel log.

use core::fmt::Write;
use kernel::{
    c_str, configfs, configfs_attrs, new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    str::{CString, Formatter},
    sync::Mutex,
};

use crate::{
    config_parse::{self as parse, Invalid},
    disk::{ConnectNote, DiskConfig, Refused, RemoteDisk},
    kernel_ext::{self, DependableSubsystem, ItemDependency, TextBuf},
    settings::{
        for_each_setting, nonzero_random,
        row::{Code, MAX_CONNECTIONS},
        ModuleContext, TargetSettings,
    },
};

/// Bytes of the last refusal's message kept for `last_error`.
const LAST_ERROR_LEN: usize = 200;

/// The configfs subsystem `/sys/kernel/config/rswap`, whose targets get `context`.
pub(crate) fn subsystem(context: ModuleContext) -> impl PinInit<DependableSubsystem<Root>, Error> {
    let item_type = configfs_attrs! {
        container: configfs::Subsystem<Root>,
        data: Root,
        child: TargetConfig,
        attributes: [
            version: 0,
        ],
    };
    DependableSubsystem::new(c_str!("rswap"), item_type, try_pin_init!(Root { context }))
}

/// The subsystem's own data.
#[pin_data]
pub(crate) struct Root {
    context: ModuleContext,
}

#[vtable]
impl configfs::AttributeOperations<0> for Root {
    type Data = Root;

    fn show(_this: &Root, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let mut w = Formatter::new(page);
        w.write_str("rswap 2 (wire format 2)\n")?;
        Ok(w.bytes_written())
    }
}

#[vtable]
impl configfs::GroupOperations for Root {
    type Child = TargetConfig;

    fn make_group(
        &self,
        name: &CStr,
    ) -> Result<impl PinInit<configfs::Group<TargetConfig>, Error>> {
        let target = CString::try_from_fmt(fmt!("{}", name.to_str()?))?;
        let name = CString::try_from_fmt(fmt!("{}", name.to_str()?))?;
        Ok(configfs::Group::new(
            name,
            target_type(),
            try_pin_init!(TargetConfig {
                name: target,
                context: self.context,
                inner <- new_mutex!(Target {
                    settings: TargetSettings::new(),
                    instance: nonzero_random(),
                    enabled: None,
                }),
                last_error <- new_mutex!(TextBuf::new()),
            }),
        ))
    }
}

/// One remote-memory target: a directory under `/sys/kernel/config/rswap`.
#[pin_data]
pub(crate) struct TargetConfig {
    /// The directory's name, which log lines about the target carry until it has a disk.
    name: CString,
    /// What the module gave it.
    context: ModuleContext,
    /// Serialises configuration changes, enable and disable.
    #[pin]
    inner: Mutex<Target>,
    /// The last refusal's message, for `last_error` (cut to [`LAST_ERROR_LEN`] bytes).
    #[pin]
    last_error: Mutex<TextBuf<LAST_ERROR_LEN>>,
}

/// Refuses something of target `this`: logs `msg` with the target's name and keeps it
/// as the target's `last_error`.
fn refuse(this: &TargetConfig, msg: core::fmt::Arguments<'_>) {
    pr_err!("{}: configfs: {}\n", &*this.name, msg);
    let mut last = this.last_error.lock();
    last.clear();
    let _ = last.write_fmt(msg);
}

/// A target's configuration and, while enabled, its disk.
struct Target {
    /// What its attributes hold.
    settings: TargetSettings,
    /// Which instance of its client id this target is, towards the server: random for
    /// each directory, kept across `enable` cycles (a region has one owner instance).
    instance: u64,
    /// The disk, while enabled.
    enabled: Option<Enabled>,
}

/// An enabled target: its disk, and the dependency that keeps its directory (`rmdir`
/// fails with `EBUSY`). Fields are dropped in declaration order: the disk first.
struct Enabled {
    disk: RemoteDisk,
    _dependency: ItemDependency,
}

fn invalid(this: &TargetConfig, what: &str, e: Invalid) -> Error {
    refuse(this, format_args!("{}: {}", what, e.0));
    EINVAL
}

/// Parses `page` with `parse` and stores the value with `store`, unless the target is
/// enabled and the setting is not `live`.
fn store_setting<T>(
    this: &TargetConfig,
    what: &str,
    live: bool,
    page: &[u8],
    parse: fn(&str) -> core::result::Result<T, Invalid>,
    store: impl FnOnce(&mut TargetSettings, T),
) -> Result {
    let text = parse::text(page).map_err(|e| invalid(this, what, e))?;
    let value = parse(text).map_err(|e| invalid(this, what, e))?;
    let mut t = this.inner.lock();
    if t.enabled.is_some() && !live {
        refuse(
            this,
            format_args!(
                "{}: read-only while enabled (write 0 to enable first)",
                what
            ),
        );
        return Err(EBUSY);
    }
    store(&mut t.settings, value);
    if let (true, Some(e)) = (live, &t.enabled) {
        e.disk.update(&t.settings);
    }
    // Says where a secret came from: the key's name, never its payload. A list's entries
    // are looked at one by one (a list of secrets may mix keys and digits).
    for desc in text
        .split(',')
        .filter_map(|e| parse::key_description(e.trim())?.ok())
    {
        pr_info!(
            "{}: configfs: {}: read from logon key \"{}\"\n",
            &*this.name,
            what,
            desc
        );
    }
    Ok(())
}

fn show_with(
    page: &mut [u8; PAGE_SIZE],
    f: impl FnOnce(&mut Formatter<'_>) -> core::fmt::Result,
) -> Result<usize> {
    let mut w = Formatter::new(page);
    f(&mut w)?;
    Ok(w.bytes_written())
}

fn enable(this: &TargetConfig, t: &mut Target) -> Result {
    let mut settings = t.settings.clone();
    if let Err(why) = parse::check_legs(
        settings.code,
        settings.addr.is_some(),
        settings.servers.len(),
        settings.secrets.len(),
        settings.extra_reads,
    ) {
        refuse(this, format_args!("enable: {}", why));
        return Err(EINVAL);
    }
    // Two legs on one server would put two fragments of every block in one place: losing
    // it would lose both. (Two addresses of one server are caught when both legs got the
    // same region.)
    if let Some((a, b, server)) = settings.servers.repeated(settings.port) {
        refuse(
            this,
            format_args!(
                "enable: servers {} and {} are the same server twice: {}",
                a,
                b,
                server.with_port_shown()
            ),
        );
        return Err(EINVAL);
    }
    // One server in `servers` (code 1+0) is the plain disk: `addr`, `port` and, if
    // `secrets` gives one, `secret` are that server's.
    if settings.code == Code::PLAIN {
        if let Some((addr, port)) = settings.servers.entry(0) {
            settings.addr = Some(addr);
            settings.port = port.unwrap_or(settings.port);
            if let Some(secret) = settings.secrets.get(0) {
                settings.secret = Some(secret.clone());
            }
        }
    }
    if settings.size.is_none() {
        refuse(this, format_args!("enable: set size first"));
        return Err(EINVAL);
    }
    // More poll queues than CPUs would have no CPU mapped to them (as nvme-rdma, which
    // caps its own at the CPUs online).
    let cpus = u16::try_from(kernel_ext::nr_cpus()).unwrap_or(u16::MAX);
    if settings.poll_queues > cpus {
        pr_info!(
            "{}: configfs: poll_queues {} is more than the {} CPUs: {} poll queues\n",
            &*this.name,
            settings.poll_queues,
            cpus,
            cpus
        );
        settings.poll_queues = cpus;
    }
    let connections = settings.connections();
    if connections > MAX_CONNECTIONS {
        refuse(
            this,
            format_args!(
                "enable: queues + poll_queues is {}, more than {} connections",
                connections, MAX_CONNECTIONS
            ),
        );
        return Err(EINVAL);
    }
    let config = DiskConfig {
        settings,
        instance: t.instance,
        target: CString::try_from_fmt(fmt!("{}", this.name.to_str()?))?,
        note: ConnectNote::new()?,
        context: this.context,
    };
    let failed = |e: Error| {
        // Copied out: `refuse` takes a mutex, the note is under a spinlock.
        let why = config.note.get();
        match why.text() {
            "" => refuse(
                this,
                format_args!("enable failed: {:?} (the kernel log has the details)", e),
            ),
            why => refuse(this, format_args!("enable failed: {:?}: {}", e, why)),
        }
        e
    };
    let dependency = ItemDependency::take(&this.name).map_err(failed)?;
    let disk = RemoteDisk::create(&config).map_err(failed)?;
    t.enabled = Some(Enabled {
        disk,
        _dependency: dependency,
    });
    Ok(())
}

/// Every setting's attribute (see [`for_each_setting!`]), and the target directory's
/// item type: those, then the target's own attributes.
macro_rules! setting_attributes {
    ($({ $id:literal, $name:ident: $ty:ty = $default:expr, $parse:expr, $show:path, $live:literal,
        $doc:literal })*) => {
        $(
            #[vtable]
            impl configfs::AttributeOperations<$id> for TargetConfig {
                type Data = TargetConfig;

                fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
                    use crate::settings::row::*;
                    let t = this.inner.lock();
                    show_with(page, |w| $show(&t.settings.$name, w))
                }

                fn store(this: &TargetConfig, page: &[u8]) -> Result {
                    use crate::settings::row::*;
                    let parse: fn(&str) -> core::result::Result<$ty, Invalid> = $parse;
                    store_setting(this, stringify!($name), $live, page, parse, |s, v| s.$name = v)
                }
            }
        )*

        /// The item type of a target directory.
        fn target_type() -> &'static configfs::ItemType<configfs::Group<TargetConfig>, TargetConfig> {
            configfs_attrs! {
                container: configfs::Group<TargetConfig>,
                data: TargetConfig,
                attributes: [
                    $($name: $id,)*
                    enable: 7,
                    state: 8,
                    device: 9,
                    last_error: 12,
                    stats: 14,
                    replace: 25,
                ],
            }
        }
    };
}
for_each_setting!(setting_attributes);

/// `stats`: the disk's counters while enabled (empty when disabled).
#[vtable]
impl configfs::AttributeOperations<14> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let s = this.inner.lock();
        let mut w = Formatter::new(page);
        if let Some(Enabled { disk, .. }) = &s.enabled {
            disk.write_stats(&mut w, PAGE_SIZE)?;
        }
        Ok(w.bytes_written())
    }
}

/// `enable`: `1` connects and creates the disk, `0` deletes it (refused while it is open).
#[vtable]
impl configfs::AttributeOperations<7> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let on = this.inner.lock().enabled.is_some();
        show_with(page, |w| writeln!(w, "{}", u8::from(on)))
    }

    fn store(this: &TargetConfig, page: &[u8]) -> Result {
        let text = parse::text(page).map_err(|e| invalid(this, "enable", e))?;
        let on = parse::boolean(text).map_err(|e| invalid(this, "enable", e))?;
        let mut t = this.inner.lock();
        match (on, t.enabled.is_some()) {
            (true, false) => enable(this, &mut t),
            (false, true) => {
                if let Some(Enabled { disk, .. }) = &t.enabled {
                    if let Err(e) = disk.shut() {
                        refuse(
                            this,
                            format_args!(
                                "enable: {} is open (swapon, mount or a process); close it first",
                                disk.name()
                            ),
                        );
                        return Err(e);
                    }
                }
                drop(t.enabled.take());
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[vtable]
impl configfs::AttributeOperations<8> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let s = this.inner.lock();
        show_with(page, |w| match &s.enabled {
            None => writeln!(w, "disabled"),
            Some(Enabled { disk, .. }) => disk.write_state(w, s.settings.bytes()),
        })
    }
}

#[vtable]
impl configfs::AttributeOperations<9> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let s = this.inner.lock();
        show_with(page, |w| match &s.enabled {
            Some(Enabled { disk, .. }) => writeln!(w, "{}", disk.name()),
            None => writeln!(w),
        })
    }
}

#[vtable]
impl configfs::AttributeOperations<12> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let last = this.last_error.lock();
        show_with(page, |w| match last.text() {
            "" => writeln!(w),
            text => writeln!(w, "{}", text),
        })
    }
}

/// `replace`: `LEG SERVER` (a server as `servers` takes one: `ADDR`, `ADDR:PORT`,
/// `[IPV6]:PORT`) puts that server, empty, in place of leg `LEG`'s while the disk is
/// enabled; the leg is rebuilt on it from the others, and `servers` names it from then
/// on. Reads as an empty line.
#[vtable]
impl configfs::AttributeOperations<25> for TargetConfig {
    type Data = TargetConfig;

    fn show(_this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        show_with(page, |w| writeln!(w))
    }

    fn store(this: &TargetConfig, page: &[u8]) -> Result {
        let text = parse::text(page).map_err(|e| invalid(this, "replace", e))?;
        let (leg, server) = parse::replacement(text).map_err(|e| invalid(this, "replace", e))?;
        let (host, port) = parse::server_entry(server).map_err(|e| invalid(this, "replace", e))?;
        let addr = crate::settings::row::host(host)
            .map_err(|e| invalid(this, "replace", e))?
            .ok_or(EINVAL)?;
        let mut t = this.inner.lock();
        let Some(Enabled { disk, .. }) = &t.enabled else {
            refuse(
                this,
                format_args!("replace: the target is not enabled (set servers instead)"),
            );
            return Err(EINVAL);
        };
        if let Err(Refused(e, why)) = disk.replace(leg, addr, port.unwrap_or(t.settings.port)) {
            refuse(this, format_args!("replace: leg {}: {}", leg, why));
            return Err(e);
        }
        match t.settings.servers.with_entry(leg, addr, port) {
            Ok(servers) => t.settings.servers = servers,
            Err(e) => pr_warn!(
                "{}: configfs: replace: servers still names the old server: {}\n",
                &*this.name,
                e.0
            ),
        }
        Ok(())
    }
}
