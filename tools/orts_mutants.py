"""Planted mutants of the Open Rails profile's laws (docs/physics.md §7): each is applied,
the law tests run, and the file restored. Every mutant must be KILLED.

Run from anywhere: ``python tools/orts_mutants.py``.
"""

from _mutants import run, selected

M = [
    (
        "tdbtools/physics/orts/diesel.py",
        "math.sqrt(2.0 * jerk * (demanded - rpm))",
        "math.sqrt(jerk * (demanded - rpm))",
    ),
    (
        "tdbtools/physics/orts/diesel.py",
        "drpm = min(max(want, drpm - EASE_FACTOR * jerk * dt), drpm + jerk * dt)",
        "drpm = want",
    ),
    ("tdbtools/physics/orts/diesel.py", "MIN_RATE_SHARE = 0.01", "MIN_RATE_SHARE = 0.0"),
    ("tdbtools/physics/orts/diesel.py", "jerk = spec.rate_down * factor", "jerk = spec.rate_up * factor"),
    ("tdbtools/physics/orts/diesel.py", "if rpm + drpm * dt > demanded:", "if False:"),
    ("tdbtools/physics/orts/diesel.py", "spec.throttle_rpm.inverse()(rpm)", "spec.throttle_rpm(rpm)"),
    (
        "tdbtools/physics/orts/diesel.py",
        "return gap / change + change / rate",
        "return gap / change + change / (2.0 * rate)",
    ),
    ("tdbtools/physics/orts/diesel.py", "min(spec.power(rpm), spec.max_power_w)", "spec.power(rpm)"),
    ("tdbtools/physics/orts/traction.py", "t = min(t, apparent)", "t = t"),
    (
        "tdbtools/physics/orts/traction.py",
        "out = force * (1.0 - (fm - fc) / (fm * fc) * average)",
        "out = force * (1.0 - (fm - fc) / (fm * fm) * average)",
    ),
    ("tdbtools/physics/orts/traction.py", "w = max((self.tau - dt) / self.tau, 0.0)", "w = 0.0"),
    ("tdbtools/physics/orts/traction.py", "power = throttle * rail_power", "power = rail_power"),
    (
        "tdbtools/physics/orts/traction.py",
        "power = max_power * throttle * throttle",
        "power = max_power * throttle",
    ),
    (
        "tdbtools/physics/orts/brakes.py",
        "dtype=np.float64)) * 3.6\n    return 7.6 / (v + 17.5) + 0.07",
        "dtype=np.float64)) * 3.6\n    return 7.6 / (v + 15.5) + 0.07",
    ),
    (
        "tdbtools/physics/orts/brakes.py",
        "abs(speed_ms) * 3.6\n    return 7.6 / (v + 17.5) + 0.07",
        "abs(speed_ms) * 3.6\n    return 7.6 / (v + 15.5) + 0.07",
    ),
    (
        "tdbtools/physics/orts/brakes.py",
        "o.max_brake_shoe_force_n > 0 and o.brake_shoe_type.lower() in KNOWN_SHOE_TYPES",
        "o.max_brake_shoe_force_n > 0",
    ),
    ("tdbtools/physics/orts/brakes.py", "DEFAULT_SHOE_NORMALISER = 0.2", "DEFAULT_SHOE_NORMALISER = 0.25"),
    ("tdbtools/physics/orts/airbrake.py", "bp[i] -= d * vol[i - 1] / s", "bp[i] -= d * vol[i] / s"),
    ("tdbtools/physics/orts/airbrake.py", "k = min(h / self.tau, 1.0)", "k = min(h / self.tau, 1.0) * 0.2"),
    ("tdbtools/physics/orts/airbrake.py", "aux -= dp / r", "aux -= dp * r"),
    ("tdbtools/physics/orts/airbrake.py", "dp = dt * self.app_rate", "dp = dt * self.rel_rate"),
    (
        "tdbtools/physics/orts/airbrake.py",
        "cyl[rel] - dt * self.rel_rate[rel]",
        "cyl[rel] - dt * self.app_rate[rel]",
    ),
    (
        "tdbtools/physics/orts/airbrake.py",
        "dp = np.where(meet, (aux - cyl) * r / (1.0 + r), dp)",
        "dp = np.where(meet, (aux - cyl) * r, dp)",
    ),
    (
        "tdbtools/physics/orts/airbrake.py",
        "drop = min(h / tau, 0.95) * bp[0]",
        "drop = min(h / tau, 0.95) * bp[0] * 0.1",
    ),
    (
        "tdbtools/physics/orts/adhesion.py",
        "return 7.5 / (v + 44.0) + 0.161",
        "return 7.5 / (v + 44.0) + 0.17",
    ),
    ("tdbtools/physics/orts/steam.py", "MEP_FACTOR = 0.85", "MEP_FACTOR = 0.8"),
    (
        "tdbtools/physics/orts/run.py",
        "a = (ft - gravity - opposing) / total",
        "a = (ft + gravity - opposing) / total",
    ),
    (
        "tdbtools/physics/orts/run.py",
        "for u in units:\n            fu, du = u.step(throttle, dyn, v, dt)",
        "for u in units[:1]:\n            fu, du = u.step(throttle, dyn, v, dt)",
    ),
    (
        "tdbtools/physics/orts/unit.py",
        "self.traction = f\n        return min(f, adhesion_limit_of(self.drive_mass, v))",
        "self.traction = f\n        return f",
    ),
    ("tdbtools/physics/compare.py", "err = sa - sb", "err = sb - sa"),
    (
        "tdbtools/physics/compare.py",
        'return [f"{row[2 * k]}.{row[2 * k + 1]}" for k in range(n)]',
        'return [f"{row[2 * k]}{row[2 * k + 1]}" for k in range(n)]',
    ),
    ("tdbtools/physics/compare.py", 'ph[acc < -0.15] = "braking"', 'ph[acc < -5.0] = "braking"'),
    ("tdbtools/formats/stock_orts.py", "ys[i] = ys[i - 1] + 1.0", "ys[i] = ys[i - 1]"),
    (
        "tdbtools/formats/stock_orts.py",
        '"brakecylinderpressureformaxbrakebrakeforce": ("max_cylinder_psi", "pressure")',
        '"brakecylinderpressureformaxbrakebrakeforce": ("max_cylinder_psi", "")',
    ),
    (
        "tdbtools/physics/orts/controllers.py",
        'return Handle("service", full_drop * v) if v > 0 else Handle("release")',
        'return Handle("service", full_drop * v * 0.5) if v > 0 else Handle("release")',
    ),
    ("tdbtools/physics/orts/replay_forces.py", "(1.0 if need > 0 else 0.0)", "0.0"),
    ("tdbtools/physics/orts/replay_forces.py", "hold = max(-need, 0.0)", "hold = 0.0"),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "trac[rows], fd = u.step(throttle, dyn, speed, dt)",
        "trac[rows], fd = u.step(1.0, dyn, speed, dt)",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "trac[rows], fd = u.step(throttle, dyn, speed, dt)",
        "trac[rows], fd = u.step(throttle, dyn, speed, dt)\n                trac[rows] *= fwd",
    ),
]
M += [
    # the compiled brake pipe (the Python one above is killed by the comparison test)
    ("tdbtools/physics/_orts_kernel.py", "bp[i] -= d * vol[i - 1] / s", "bp[i] -= d * vol[i] / s"),
    ("tdbtools/physics/_orts_kernel.py", "k = min(h / tau, 1.0)", "k = min(h / tau, 1.0) * 0.2"),
    # cab controllers
    (
        "tdbtools/physics/orts/controllers.py",
        "return i, (v if notches[i].smooth else notches[i].value)",
        "return i, v",
    ),
    ("tdbtools/physics/orts/controllers.py", 'return 1.0 - x if n.kind == "release" else x', "return x"),
    (
        "tdbtools/physics/orts/controllers.py",
        'Handle("service", min_drop * (1.0 - x) + full_drop * x)',
        'Handle("service", full_drop * x)',
    ),
    ("tdbtools/physics/orts/controllers.py", 'if kind == "emergency":', 'if kind == "emergencyx":'),
    ("tdbtools/physics/orts/controllers.py", "while i > 0 and notches[i].value > v:", "while i > 0:"),
    # the automatic driver's plan of Open Rails' brakes
    (
        "tdbtools/physics/orts/auto_brakes.py",
        "lag = float(dt * (short[:-1] + short[1:]).sum() / 2.0)",
        "lag = float(dt * (short[:-1] + short[1:]).sum() / 4.0)",
    ),
    (
        "tdbtools/physics/orts/auto_brakes.py",
        "r = float(np.sum(w * p / self.ratio) / np.sum(w))",
        "r = float(np.sum(w * p * self.ratio) / np.sum(w))",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "reduction = max(reduction, self.held[k], wanted)",
        "reduction = max(reduction, wanted)",
    ),
    ("tdbtools/physics/driver.py", "self._applied = self.brakes_now()", "pass"),
    # the automatic driver's stop under Open Rails' brakes: the level it asks for, the lap,
    # the friction gain, the reduction from the reservoirs as they are, what it reads
    (
        "tdbtools/physics/driver.py",
        "return v * t_k - b * t_k * t_k / 2.0 - r * t_k**3 / 6.0",
        "return v * t_k - b * t_k * t_k / 2.0 - r * t_k**3 / 3.0",
    ),
    (
        "tdbtools/physics/driver.py",
        "return ramp + (v_top * v_top - vk * vk) / (2.0 * x)",
        "return ramp + (v * v - vk * vk) / (2.0 * x)",
    ),
    ("tdbtools/physics/driver.py", "if dv2 <= 2.0 * be * d or r == math.inf:", "if r == math.inf:"),
    (
        "tdbtools/physics/driver.py",
        "keep = self.ARRIVED_WITHIN + (v * b / (2.0 * r) if r < math.inf else 0.0)",
        "keep = self.ARRIVED_WITHIN",
    ),
    ("tdbtools/physics/driver.py", "lap = self._lap_need(cons, v)", "lap = 0.0"),
    ("tdbtools/physics/driver.py", "asked = self._build_to(v, vk, d)", "asked = min(need, 3.0 * decel)"),
    (
        "tdbtools/physics/orts/auto_brakes.py",
        "return min(float(np.interp(v, self.u, self.f)) * integral / half, 1.0)",
        "return 1.0",
    ),
    (
        "tdbtools/physics/orts/auto_brakes.py",
        "bp = float(np.sum(w * (aux + (cyl - p) / self.ratio)) / np.sum(w))",
        "bp = float(np.sum(w * (max_psi + (cyl - p) / self.ratio)) / np.sum(w))",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "self.brake_decel[k] = (total - fwd * other) / M",
        "self.brake_decel[k] = float(np.sum(brk[a:b])) / M",
    ),
    ("tdbtools/physics/stages/setup.py", "d.brake_delay = plan.lag_s", "d.brake_delay = 0.1 * plan.lag_s"),
    # the legacy force's fade at MaxVelocity (MSTSLocomotive / MSTSDieselLocomotive)
    ("tdbtools/physics/orts/traction.py", "return 20.0 * (max_speed - v)", "return 1.0"),
    ("tdbtools/physics/orts/traction.py", "    if v > max_speed:\n        return 0.0\n", ""),
    ("tdbtools/physics/orts/traction.py", "FADE_BAND_MS = 0.05", "FADE_BAND_MS = 0.5"),
    (
        "tdbtools/physics/orts/traction.py",
        "force = throttle * max_force * max_speed_factor(v, max_speed)",
        "force = throttle * max_force",
    ),
    (
        "tdbtools/physics/orts/unit.py",
        "t, v, s.max_force_n or 0.0, self.rail_power, s.max_velocity_ms or 0.0\n        )",
        "t, v, s.max_force_n or 0.0, self.rail_power, 0.0\n        )",
    ),
    # the trailing locomotive's drag factor in run_train
    ("tdbtools/physics/orts/run.py", "out[i] = s.trail_loco_resistance_factor", "out[i] = 1.0"),
    (
        "tdbtools/physics/orts/run.py",
        "resistance(stocks, f0, vm, drag, v)",
        "resistance(stocks, f0, vm, drag * 0 + 1, v)",
    ),
    # real files' tokens
    ("tdbtools/formats/stock_orts.py", '"ortscylinderspringpressure": (', '"ortscylinderspringpressurex": ('),
    (
        "tdbtools/formats/stock_orts.py",
        '"ortsbrakepipechargingrate": ("pipe_charging_rate"',
        '"ortsbrakepipechargingratex": ("pipe_charging_rate"',
    ),
]
M += [
    # the traction update of the present sources (MSTSLocomotive.UpdateTractionForce)
    (
        "tdbtools/physics/orts/traction.py",
        "return min(force + ramps.force_up * dt, target) if ramps.force_up > 0 else target",
        "return target",
    ),
    (
        "tdbtools/physics/orts/traction.py",
        "down = ramps.force_to_zero if to_zero else ramps.force_down",
        "down = ramps.force_down",
    ),
    (
        "tdbtools/physics/orts/traction.py",
        "target = min(target, (power + step) / v)",
        "target = target",
    ),
    ("tdbtools/physics/orts/unit.py", "cap = min(cap, self._engine_power() / v)", "cap = cap"),
    (
        "tdbtools/physics/orts/unit.py",
        "self.average, dt)\n        self.traction = f\n",
        "self.average, dt)\n        self.traction = 0.0\n",
    ),
    (
        "tdbtools/formats/stock_orts.py",
        '"ortstractiveforcerampdowntozerorate": ("force_to_zero", "force_rate")',
        '"ortstractiveforcerampdowntozerorate": ("force_down", "force_rate")',
    ),
    ("tdbtools/formats/stock_orts.py", 'v["power_limited"] = rd.string', 'v["power_limitedx"] = rd.string'),
]
M += [
    # MSTS diesel engines (DieselEngine.EstablishParameters) and the legacy gearbox (GearBox)
    ("tdbtools/physics/orts/diesel.py", "top = 1.5 * idle", "top = top"),
    (
        "tdbtools/physics/orts/diesel.py",
        "top = max_power_w / _rad_s(max_rpm) / 0.81",
        "top = max_power_w / _rad_s(max_rpm) / 0.9",
    ),
    ("tdbtools/physics/orts/diesel.py", "rate_up=e.rate_up or up", "rate_up=e.rate_up or 50.0"),
    (
        "tdbtools/physics/orts/gearbox.py",
        "Gear(v, f, v / engine.max_rpm,",
        "Gear(v, f, 1.1 * v / engine.max_rpm,",
    ),
    (
        "tdbtools/physics/orts/gearbox.py",
        "f = spec.forces_at_speed_n[i] * t_max / t_top / n_engines",
        "f = spec.forces_at_speed_n[i] * t_max / t_top",
    ),
    (
        "tdbtools/physics/orts/gearbox.py",
        "if v > self.engine.max_rpm * g.up * g.ratio:",
        "if v > self.engine.max_rpm * 0.9 * g.ratio:",
    ),
    (
        "tdbtools/physics/orts/gearbox.py",
        "elif v < self.engine.max_rpm * g.down * g.ratio:",
        "elif v < self.engine.max_rpm * 0.25 * g.ratio:",
    ),
    ("tdbtools/physics/orts/gearbox.py", "f = share * t * g.max_force_n", "f = share * g.max_force_n"),
    ("tdbtools/physics/orts/gearbox.py", "f = min(f, diesel.output_power(e, rpm) / v)", "f = f"),
    ("tdbtools/physics/orts/gearbox.py", "SHIFT_SLIP = 0.05", "SHIFT_SLIP = 0.5"),
    (
        "tdbtools/physics/orts/gearbox.py",
        "if throttle > 0 and shaft >= self.gears[self.current].down * self.engine.max_rpm:",
        "if throttle > 0:",
    ),
    (
        "tdbtools/physics/orts/gearbox.py",
        "if throttle <= 0:\n                self._neutral()",
        "if False:\n                self._neutral()",
    ),
    ("tdbtools/physics/orts/gearbox.py", "if self.slip * 100.0 < -20.0:", "if self.slip * 100.0 < -200.0:"),
    (
        "tdbtools/physics/orts/unit.py",
        "return bool(self.boxes) and self.stock.tractive_force_curve is None",
        "return False",
    ),
    (
        "tdbtools/formats/stock_orts.py",
        '("max_speeds_ms", "speed_mph", True)',
        '("max_speeds_ms", "speed", True)',
    ),
]
M += [
    # Open Rails' low-speed resistance (MSTSWagon.UpdateTrainBaseResistance_*)
    ("tdbtools/physics/orts/resistance.py", "track = 1120.0 / grade * axle / KG_TUK * LBF", "track = 0.0"),
    ("tdbtools/physics/orts/resistance.py", "wheel = s.wheel_radius_m / REF_WHEEL_RADIUS_M", "wheel = 1.0"),
    (
        "tdbtools/physics/orts/resistance.py",
        "return 1.2 * floor if f0 < floor else f0",
        "return floor if f0 < floor else f0",
    ),
    (
        "tdbtools/physics/orts/resistance.py",
        "f0[i] = s.standstill_friction_n * _between(temp_c, 1.2, 1.0)",
        "f0[i] = s.standstill_friction_n",
    ),
    ("tdbtools/physics/orts/resistance.py", "vm[i] = max(s.merge_speed_ms, 1e-3)", "vm[i] = MPH5"),
    ("tdbtools/physics/orts/resistance.py", "at_merge = a + m * (b + m * s.davis_c)", "at_merge = a + m * b"),
    ("tdbtools/physics/orts/resistance.py", "f0[i] = starting_force(s, temp_c)", "pass"),
]
M += [
    # the mass Open Rails makes of ORTSFreightAnims (FreightAnimations, MSTSWagon)
    ("tdbtools/formats/stock_orts.py", "if full and not load:", "if not load:"),
    ("tdbtools/formats/stock_orts.py", 'static += _num(rd, sub, "mass", 0.0)', "static += 0.0"),
    (
        "tdbtools/formats/stock_orts.py",
        "    if not blk.items:\n        return default\n",
        "    if not blk.items:\n        return not default\n",
    ),
    (
        "tdbtools/physics/orts/mass.py",
        "return f.empty_kg + f.load_kg + f.static_kg",
        "return f.empty_kg + f.load_kg",
    ),
    (
        "tdbtools/physics/orts/run.py",
        "mass = np.array([orts_mass(s) for s in stocks])",
        "mass = np.array([s.mass_kg for s in stocks])",
    ),
]
M += [
    # Open Rails' VacuumSinglePipe (docs/physics.md §7.3, vacuum brake)
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "p[0] = min(p[0] * (1.0 + h / tau_x), target_p)",
        "p[0] = min(p[0] * (1.0 + 0.5 * h / tau_x), target_p)",
    ),
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "p[0] = max(p[0] - h * self.charging_rate, target_p)",
        "p[0] = max(p[0] - 2 * h * self.charging_rate, target_p)",
    ),
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "self.service_tau = service_tau * m",
        "self.service_tau = service_tau",
    ),
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "self.charging_rate = charging_rate / m",
        "self.charging_rate = charging_rate",
    ),
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "p[i] = min(max(p[i] - d * w_rear[i - 1], low), ATM_PSI)",
        "pass",
    ),
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "adj = res + res_vol / (res_vol - travel * cyl_vol)",
        "adj = res",
    ),
    ("tdbtools/physics/orts/vacuumbrake.py", "from_pipe = apply_ & ~self.dav", "from_pipe = apply_"),
    ("tdbtools/physics/orts/vacuumbrake.py", "cyl[release] -= dp[release]", "pass"),
    (
        "tdbtools/physics/orts/vacuumbrake.py",
        "return np.pi * (d / 2.0) ** 2 * PISTON_TRAVEL_IN * _IN3_M3",
        "return np.pi * d**2 * PISTON_TRAVEL_IN * _IN3_M3",
    ),
    (
        "tdbtools/physics/orts/run.py",
        "return all(s.orts is not None and s.orts.brakes.vacuum for s in stocks)",
        "return False",
    ),
    (
        "tdbtools/physics/orts/auto_brakes.py",
        "c = cylinder_for(aux, p, vt.res_vol, vt.cyl_vol, vt.max_vacuum_psi)",
        "c = aux + p",
    ),
    (
        "tdbtools/stf/units.py",
        '"pressure_inhg": ("pressure", 0.4911542)',
        '"pressure_inhg": ("pressure", 1.0)',
    ),
    ("tdbtools/formats/stock_orts.py", 'brakes["direct_admission"] = _num(rd, it, None, 0.0) == 1.0', "pass"),
    # the dynamic brake (docs/physics.md §7.2)
    (
        "tdbtools/physics/orts/dynamic.py",
        "if not self.engaged and self.waited > self.delay:",
        "if not self.engaged:",
    ),
    ("tdbtools/physics/orts/dynamic.py", "        return ELECTRIC_SHORT_DELAY_S", "        return delay"),
    (
        "tdbtools/physics/orts/dynamic.py",
        "if setting > 0 and throttle <= 0 and traction == 0:",
        "if setting > 0:",
    ),
    ("tdbtools/physics/orts/dynamic.py", "elif self.force == 0:", "else:"),
    (
        "tdbtools/physics/orts/dynamic.py",
        "self.force = ramp_force(self.force, dt, target, cap, v, self.prev_speed, self.ramps)",
        "self.force = target",
    ),
    (
        "tdbtools/physics/orts/unit.py",
        "ft = self.force(0.0 if db.engaged else throttle, v, dt)",
        "ft = self.force(throttle, v, dt)",
    ),
    ("tdbtools/physics/orts/traction.py", "    return setting * max_force", "    return max_force"),
    (
        "tdbtools/physics/orts/traction.py",
        "if setting <= 0 or v <= 0 or v < min_speed:",
        "if setting <= 0 or v <= 0:",
    ),
    (
        "tdbtools/physics/orts/controllers.py",
        "    return throttle_value(spec, handle)",
        "    return min(max(float(handle), 0.0), 1.0)",
    ),
    ("tdbtools/physics/orts/replay_forces.py", "            brk[rows] += fd", "            pass"),
    (
        "tdbtools/formats/stock_orts.py",
        'v["dynamic_brake_delay_s"] = max(_num(rd, it, "time", 0.0), 0.0)',
        "pass",
    ),
    (
        "tdbtools/formats/stock_orts.py",
        'v["dynamic_brake_min_speed_ms"] = _num(rd, it, "speed_mph", 0.0)',
        'v["dynamic_brake_min_speed_ms"] = _num(rd, it, "speed", 0.0)',
    ),
    (
        "tdbtools/formats/stock_orts.py",
        'dyn_ramps.setdefault("force_to_zero", dyn_ramps.get("force_down", 0.0))',
        "pass",
    ),
]
M += [
    # the long train's fused brakes and scalar laws (issue 32, tests/test_orts_fused.py)
    (
        "tdbtools/physics/_orts_kernel.py",
        "u = abs(v[i]) * 3.6\n        mu = 7.6 / (u + 17.5) + 0.07\n        shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)\n        c = ",
        "u = v[i] * 3.6\n        mu = 7.6 / (u + 17.5) + 0.07\n        shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)\n        c = ",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "    if x < lo:\n        return lo",
        "    if x <= lo:\n        return lo",
    ),
    ("tdbtools/physics/_orts_kernel.py", "if not d <= settled:", "if d > settled:"),
    (
        "tdbtools/physics/orts/brakes.py",
        "    v = abs(speed_ms) * 3.6\n    return 7.6",
        "    v = speed_ms * 3.6\n    return 7.6",
    ),
    (
        "tdbtools/physics/orts/auto_brakes.py",
        "full = _sum(self.capacity * f1) if kernel is None",
        "full = _sum(self.capacity) * f1 if kernel is None",
    ),
    (
        "tdbtools/physics/orts/unit.py",
        "at_limit = target if limit == t else self.available(limit, v)",
        "at_limit = target",
    ),
    (
        "tdbtools/physics/orts/adhesion.py",
        "    v = abs(speed_ms) * 3.6\n    return (7.5",
        "    v = speed_ms * 3.6\n    return (7.5",
    ),
    # issue 32 (h32j): the compiled power units, the one-call brakes and the sums
    (
        "tdbtools/physics/_orts_kernel.py",
        "drpm = _pmin(_pmax(want, drpm - EASE_FACTOR * jerk * dt), drpm + jerk * dt)",
        "drpm = _pmin(_pmax(want, drpm - jerk * dt), drpm + jerk * dt)",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "target = _pmax(target, _pmin(force, (power - step) / v))",
        "target = _pmax(target, (power - step) / v)",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "average = w * average + (1.0 - w) * out",
        "average = w * average + (1.0 - w) * f",
    ),
    ("tdbtools/physics/_orts_kernel.py", "fade = 20.0 * (max_speed - v)", "fade = 10.0 * (max_speed - v)"),
    (
        "tdbtools/physics/_orts_kernel.py",
        "at_limit = target if limit == t else _available(spec, limit, v)",
        "at_limit = target",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))\n    while i < n:\n        res += a[s + i] * f",
        "    res = (((r0 + r1) + r2) + r3) + ((r4 + r5) + (r6 + r7))\n    while i < n:\n        res += a[s + i] * f",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "            n2 -= n2 % 8\n            tn[nt] = -1",
        "            tn[nt] = -1",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "return 0.0 + _pairwise(a, s, e - s, 1.0)",
        "return _pairwise(a, s, e - s, 1.0)",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "    memo[M_APPLIED] = applied\n    return applied, np_sum(force, 0, n)",
        "    memo[M_APPLIED] = applied\n    return applied, np_sum(frac, 0, n)",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "return np_sum(x, s, e), np_sum(y, s, e)",
        "return np_sum(x, s, e), np_sum(y, s + 1, e)",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "            if not fd == 0.0:\n                total = None",
        "            if False:\n                total = None",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "consts[K.P_FULL_SERVICE_BP] = air.max_psi - air.full_service_drop",
        "consts[K.P_FULL_SERVICE_BP] = air.max_psi",
    ),
    (
        "tdbtools/physics/orts/diesel.py",
        "pct = (rpm - spec.idle_rpm) / span * 100.0 if span > 0 else 0.0",
        "pct = rpm / span * 100.0 if span > 0 else 0.0",
    ),
    (
        "tdbtools/physics/orts/unit.py",
        "spec[K.U_UNLOAD] = o.unloading_speed_ms if o else 0.0",
        "spec[K.U_UNLOAD] = 0.0",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "return 0.0 + _pairwise(a, 0, a.size, f)",
        "return 0.0 + _pairwise(a, 0, a.size, 1.0) * f",
    ),
    # (h32o: the long train's step with less work; tests/test_orts_quiet.py, test_step_kernel.py)
    (
        "tdbtools/physics/_orts_kernel.py",
        "memo[M_QUIET] = QUIET if (pipe_still and not valves_changed) else BUSY",
        "memo[M_QUIET] = QUIET if (pipe_still or not valves_changed) else BUSY",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "same_bits(x, aux[i]) and same_bits(b, bp[i]) and same_bits(c, cyl[i]) and s == state[i]",
        "same_bits(x, aux[i]) and same_bits(b, bp[i]) and same_bits(c, cyl[i])",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "return a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b)",
        "return True",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "force[i] = capacity[i] * frac[i] * shoe",
        "force[i] = capacity[i] * frac[i] * mu",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "return memo[M_APPLIED], np_sum(force, 0, n)",
        "return 0.0, np_sum(force, 0, n)",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "u = abs(v[i]) * 3.6\n        mu = 7.6 / (u + 17.5) + 0.07\n        shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)\n        force",
        "u = v[i] * 3.6\n        mu = 7.6 / (u + 17.5) + 0.07\n        shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)\n        force",
    ),
    ("tdbtools/physics/_orts_kernel.py", "        and same_bits(dt, memo[M_DT])\n", "\n"),
    (
        "tdbtools/physics/_step_kernel.py",
        "sums[1, k] = np_sum(resist, bounds[k], bounds[k + 1])",
        "sums[1, k] = np_sum(resist, bounds[k], bounds[k + 1] - 1)",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "g = _on_table(x[k] - ctab[C_HALF, c], ctab, c)",
        "g = _on_table(x[k], ctab, c)",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "r = f - ctab[C_SPACING, c]",
        "r = f - ctab[C_SPACING, k % ctab.shape[1]]",
    ),
    (
        "tdbtools/physics/stages/forces.py",
        "_, first, ctype = np.unique(keys, return_index=True, return_inverse=True)",
        "_, first, ctype = np.unique(cols, axis=0, return_index=True, return_inverse=True)",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "if x == last and (x != 0.0 or math.copysign(1.0, x) == math.copysign(1.0, last)):",
        "if x == last:",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "            if handle is not self._handle:",
        "            if self._handle is None:",
    ),
    # (h33c: each train's step in one compiled call; tests/test_orts_step_kernel.py)
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "out[F_TRAC, uidx[0, i]] = caps[uidx[1, i]]",
        "out[F_TRAC, uidx[0, i]] = -caps[uidx[1, i]]",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "            trac[rows], fd = u.step(throttle, dyn, speed, dt)",
        "            trac[rows], fd = u.step(throttle, dyn, speed, dt)\n            trac[rows] *= -1.0",
    ),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "other = sums[0, k] - fwd * sums[1, k]",
        "other = -sums[0, k] - fwd * sums[1, k]",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "        other = gsum - fwd * rsum",
        "        other = -gsum - fwd * rsum",
    ),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "out[F_OPPOSED, i] = out[F_RESIST, i] + out[F_BRAKE, i]",
        "out[F_OPPOSED, i] = out[F_RESIST, i] + 0.5 * out[F_BRAKE, i]",
    ),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "        if not emergency and hold > 0:",
        "        if not emergency and hold > 1e4:",
    ),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "        if q[Q_APPLIED] > q[Q_BRAKES_ON] and vk > q[Q_MOVING]:",
        "        if q[Q_APPLIED] > q[Q_BRAKES_ON]:",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "        if c.speed_target is not None and tb.applied > BRAKES_ON and vk > MOVING:",
        "        if c.speed_target is not None and tb.applied > BRAKES_ON:",
    ),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "                c += (s - t) + x",
        "                c += (s - t)",
    ),
    ("tdbtools/physics/_orts_step_kernel.py", "    s = 0.0 + a[0]\n", "    s = a[0]\n"),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "    return DONE, throttle, applied, (total - fwd * other) / M",
        "    return DONE, throttle, applied, (total + fwd * other) / M",
    ),
    (
        "tdbtools/physics/orts/fused_step.py",
        "            row[K.U_AVERAGE], row[K.U_TRACTION], row[K.U_PREV_SPEED] = u.average, u.traction, u.prev_speed",
        "            row[K.U_AVERAGE], row[K.U_PREV_SPEED] = u.average, u.prev_speed",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "            if target is not None and not emergency:",
        "            if False:",
    ),
    (
        "tdbtools/physics/_orts_step_kernel.py",
        "    return DONE, throttle, applied, (total - fwd * other) / M",
        "    return DONE, throttle, applied, (0.5 * total - fwd * other) / M",
    ),
    (
        "tdbtools/physics/orts/replay_forces.py",
        "self.brake_decel[k] = (total - fwd * other) / M",
        "self.brake_decel[k] = (0.5 * total - fwd * other) / M",
    ),
    ("tdbtools/physics/_step_kernel.py", "if s != s or s > sums[2, k]:", "if s != s or s < sums[2, k]:"),
    (
        "tdbtools/physics/stages/forces.py",
        "np.maximum(vmax_car, np.abs(v1), out=vmax_car)",
        "np.minimum(vmax_car, np.abs(v1), out=vmax_car)",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "np.divide(Y[1:] - Y[:-1], S[1:] - S[:-1], out=slope[:-1])",
        "np.divide(Y[:-1] - Y[1:], S[1:] - S[:-1], out=slope[:-1])",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "        v = s * (xv - xp[j]) + fp[j]\n",
        "        v = s * (xv - xp[j]) + fp[j + 1]\n",
    ),
    ("tdbtools/physics/orts/fused_step.py", "        theirs[:] = mine\n", "\n"),
    ("tdbtools/physics/orts/fused_step.py", "        mine[:] = theirs\n", "\n"),
    # (h34d: released brakes without the shoe's arithmetic, kept table rows; mutants of a
    # stale per-car term, a lookup kept after the point left its row or piece, the
    # account missing a term; tests/test_orts_quiet.py, test_step_kernel.py,
    # test_orts_step_kernel.py)
    (
        "tdbtools/physics/_orts_kernel.py",
        "if not (k >= 0.0 and math.copysign(1.0, k) > 0.0 and k < math.inf):",
        "if not (k < math.inf):",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "        if s == s:\n            force[i] = 0.0",
        "        if True:\n            force[i] = 0.0",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "    if memo[M_QUIET] != BUSY and _released(frac, cars[B_CAPACITY]):",
        "    if _released(frac, cars[B_CAPACITY]):",
    ),
    (
        "tdbtools/physics/_orts_kernel.py",
        "        if not (c == 0.0 and math.copysign(1.0, c) > 0.0):",
        "        if not (c == 0.0):",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "if 0 <= r < m - 1 and xp[r] <= xv and xv < xp[r + 1]:",
        "if 0 <= r < m - 1 and xp[r] <= xv:",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "                while p < m and P1[p] < g:\n                    p += 1",
        "                while False and P1[p] < g:\n                    p += 1",
    ),
    (
        "tdbtools/physics/_step_kernel.py",
        "        i = n - 1 - k\n        c = ctype[k]\n",
        "        i = n - 1 - k\n        c = ctype[0]\n",
    ),
    ("tdbtools/physics/_step_kernel.py", "        sums[1, k] += brk[k] * abs(dx)\n", "\n"),
]
TESTS = [
    "tests/test_orts_unit_kernel.py",
    "tests/test_orts_fused.py",
    "tests/test_orts_dynamic.py",
    "tests/test_orts_controllers.py",
    "tests/test_orts_physics.py",
    "tests/test_compare.py",
    "tests/test_orts_replay.py",
    "tests/test_orts_driver.py",
    "tests/test_orts_vacuum.py",
    "tests/test_orts_quiet.py",
    "tests/test_step_kernel.py",
    "tests/test_orts_step_kernel.py",
    "tests/test_replay_fast_paths.py",
]
# (the exit status stays 0, as before: the verdicts are read from the lines it prints)
run(M, TESTS, selected(__doc__))
