"""Rolling stock (.eng/.wag) and consists (.con): the sample stock, units, Davis filling
(docs/physics.md §3.2), the MSTS Friction fallback, couplers (docs/formats.md §10.3), Flip, and finding the stock of DK24's
consists (which is not installed)."""

from __future__ import annotations

import importlib.util
import math
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import DK24, REPO, SAMPLE_INSTALL, needs_dk24

from tdbtools.errors import Diagnostics, FormatError, RouteError, UnitError
from tdbtools.formats.consist import CarEntry, StandInWarning, read_consist, resolve_stock, stand_in_variant
from tdbtools.formats.stock import DEFAULT_COUPLER, Stock, fcalc_davis, read_stock, stock_from_document
from tdbtools.stf import parse_text

TRAINS = SAMPLE_INSTALL / "TRAINS"
TRAINSET = TRAINS / "TRAINSET"
CONSISTS = TRAINS / "CONSISTS"
HEADER = "SIMISA@@@@@@@@@@JINX0D0t______\n\n"

# Independent constants (docs/formats.md §3, docs/physics.md §3.2).
LBF = 4.44822162
LBF_MPH = 4.44822162 / 0.44704  # 9.950388
LBF_MPH2 = 4.44822162 / 0.44704**2  # 22.258385
TON_US = 907.18474
FT2 = 0.09290304


def stock_text(body: str, kind: str = "wagon") -> Stock:
    return stock_from_document(parse_text(HEADER + body, f"<{kind}>"), Diagnostics(), kind)


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + body, encoding="utf-8")
    return path


# -- the sample stock -----------------------------------------------------------------------


def test_sample_electric_exact_si():
    s = read_stock(TRAINSET / "SAMPLE_EL" / "SAMPLE_EL64.eng")
    assert (s.kind, s.wagon_type, s.engine_type) == ("engine", "Engine", "Electric")
    assert s.name == "Sample EL 64 Bo-Bo electric"
    assert s.mass_kg == 84000.0  # 84t
    assert (s.width_m, s.height_m, s.length_m) == (3.01, 4.25, 18.98)
    assert s.max_power_w == 6.4e6 and s.max_force_n == 300e3  # 6400kW, 300kN
    assert s.max_continuous_force_n is None
    assert s.max_velocity_ms == pytest.approx(55.556, abs=5e-4)  # 200km/h
    assert s.max_velocity_ms == 200 * 0.27777778  # STFReader's kph factor
    assert (s.davis_a, s.davis_b, s.davis_c) == (940.0, 18.4, 5.6)
    assert s.is_davis_friction and s.friction0_n is None
    assert s.max_brake_force_n == 110e3
    assert s.bogie_spacing_m == 9.9 and s.wheel_radius_m == 0.625 == s.driver_wheel_radius_m
    assert (s.num_axles, s.num_drive_axles) == (4, 4)
    assert s.tractive_force_curve is None
    assert s.trail_loco_resistance_factor == 0.2083 and s.drag_constant == 0.0024


def test_sample_electric_coupler_slots_depend_on_file_order():
    s = read_stock(TRAINSET / "SAMPLE_EL" / "SAMPLE_EL64.eng")
    c0, c1 = s.couplers
    # slot 0: Stiffness ( 1e6 5e6 ) read before r0 ( 0 8cm ) -> 0.04 * 5/6
    assert c0.slack1 == pytest.approx(0.04 * 5e6 / 6e6, rel=1e-12)
    # slot 1: r0 first -> the default stiffness 1e7/2e7 is used -> 0.04 * 2/3
    assert c1.slack1 == pytest.approx(0.04 * 2e7 / 3e7, rel=1e-12)
    for c in (c0, c1):
        assert (c.r0x, c.r0y, c.slack2, c.rigid) == (0.0, 0.08, 0.035, False)
        assert c.stiffness == 7 * 6e6 and (c.stiffness1, c.stiffness2) == (1e6, 5e6)
        assert (c.break1, c.break2) == (1e6, 1.5e6)
    assert s.coupler(False) is c0 and s.coupler(True) is c1


def test_sample_diesel_uses_the_friction_fallback():
    s = read_stock(TRAINSET / "SAMPLE_DL" / "SAMPLE_DL66.eng")
    assert (s.engine_type, s.mass_kg, s.num_axles) == ("Diesel", 126000.0, 6)
    assert (s.max_power_w, s.max_force_n, s.max_continuous_force_n) == (2.4e6, 400e3, 260e3)
    assert s.max_velocity_ms == pytest.approx(120 / 3.6, rel=1e-7)
    assert s.bearing_type == "Default" and not s.is_davis_friction
    assert s.bogie_spacing_m is None and s.bogie_spacing_or_default_m == pytest.approx(0.65 * 21.35)
    # Friction ( 1500N/m/s -0.1 4mph 18N/m/s 1.8 … ): FCalc data, fitted
    a, b, c = numeric_fit(1500.0, -0.1, 4 * 0.44704, 18.0, 1.8)
    assert (s.davis_a, s.davis_b, s.davis_c) == pytest.approx((a, b, c), rel=1e-7)
    assert s.friction0_n == pytest.approx(1500.0 * (0.0025 * 0.44704) ** -0.1, rel=1e-12)
    assert 1.5 < s.friction0_n / s.davis_a < 3  # a realistic standstill / running ratio
    c0 = s.coupler()
    assert (c0.r0x, c0.slack1, c0.stiffness, c0.break2) == (0.2, 0.012, 2e7, 2e6)


def test_sample_coach_roller_bearing_formulas():
    s = read_stock(TRAINSET / "SAMPLE_COACH" / "SAMPLE_BPMZ.wag")
    assert (s.kind, s.wagon_type, s.engine_type) == ("wagon", "Passenger", None)  # Carriage
    assert (s.mass_kg, s.length_m, s.width_m, s.height_m) == (45000.0, 26.4, 2.825, 4.05)
    assert s.max_power_w is None and s.max_velocity_ms is None and s.driver_wheel_radius_m is None
    t = 45000 / TON_US
    assert s.davis_a == pytest.approx((1.5 * t + 18 * 4) * LBF, rel=1e-12)
    assert s.davis_b == pytest.approx(0.02 * t * LBF_MPH, rel=1e-9)
    assert s.davis_c == pytest.approx(2.825 * 4.05 / FT2 * 0.00034 * LBF_MPH2, rel=1e-9)
    assert s.is_davis_friction and s.bogie_spacing_m == 19.0 and s.num_axles == 4
    assert len(s.couplers) == 2  # from the shared include
    assert s.coupler().slack1 == pytest.approx(0.05 * 5 / 6) and s.coupler().break1 == 850e3


def test_sample_freight_plain_bearing_formulas_and_include():
    path = TRAINSET / "SAMPLE_FREIGHT" / "SAMPLE_EANOS.wag"
    s = read_stock(path)
    t = 80000 / TON_US
    assert s.wagon_type == "Freight" and s.bearing_type == "Friction"
    assert s.davis_a == pytest.approx((1.3 * t + 29 * 4) * LBF, rel=1e-12)
    assert s.davis_b == pytest.approx(0.045 * t * LBF_MPH, rel=1e-9)
    assert s.davis_c == pytest.approx(3.0 * 3.2 / FT2 * 0.0005 * LBF_MPH2, rel=1e-9)
    assert s.max_brake_force_n == 89e3  # default
    assert s.couplers == read_stock(TRAINSET / "SAMPLE_COACH" / "SAMPLE_BPMZ.wag").couplers
    from tdbtools.stf import parse_file

    assert any(p.endswith("uic_screw_couplings.inc") for p in parse_file(path).includes)


def test_sample_files_are_utf16_crlf_and_generated(tmp_path):
    files = sorted(p for p in TRAINS.rglob("*") if p.is_file())
    assert len(files) == 8
    for p in files:
        data = p.read_bytes()
        assert data[:2] == b"\xff\xfe"
        text = data[2:].decode("utf-16-le")
        assert text.startswith("SIMISA@@@@@@@@@@JINX0D0t______\r\n") and "\n" not in text.replace("\r\n", "")
    # The generator reproduces the committed files byte for byte.
    script = REPO / "sample_routes" / "generate_stock.py"
    spec = importlib.util.spec_from_file_location("generate_stock", script)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.OUT = tmp_path
    gen.main()
    for p in files:
        assert (tmp_path / p.relative_to(TRAINS)).read_bytes() == p.read_bytes(), p


# -- units ----------------------------------------------------------------------------------


def test_units_are_converted():
    s = stock_text(
        """
Wagon ( w Type ( Freight ) Mass ( 84t ) Size ( 120in 3200mm 60ft )
  ORTSDavis_A ( 200lbf ) ORTSDavis_B ( 1.5lbf/mph ) ORTSDavis_C ( 0.05lbf/mph^2 )
  MaxBrakeForce ( 20000lbf ) ORTSWagonFrontalArea ( 100 ) ORTSLengthBogieCentre ( 30ft )
  WheelRadius ( 18in ) )
Engine ( e MaxVelocity ( 200km/h ) MaxForce ( 300kN ) MaxPower ( 4000hp ) MaxContinuousForce ( 50000lbf ) )
""",
        "engine",
    )
    assert s.mass_kg == 84000.0
    assert (s.width_m, s.height_m, s.length_m) == pytest.approx((3.048, 3.2, 18.288))
    assert s.davis_a == pytest.approx(200 * LBF)
    assert s.davis_b == pytest.approx(1.5 * 9.9503884)
    assert s.davis_c == pytest.approx(0.05 * 22.2583849)
    assert s.max_velocity_ms == pytest.approx(55.556, abs=5e-4)
    assert s.max_force_n == 300e3 and s.max_power_w == pytest.approx(4000 * 745.699872)
    assert s.max_continuous_force_n == pytest.approx(50000 * LBF)
    assert s.max_brake_force_n == pytest.approx(20000 * LBF)
    assert s.frontal_area_m2 == pytest.approx(100 * FT2)  # area defaults to ft²
    assert s.bogie_spacing_m == pytest.approx(9.144) and s.wheel_radius_m == pytest.approx(0.4572)


def test_bare_numbers_use_the_default_unit():
    s = stock_text("Wagon ( w Mass ( 500 ) Size ( 3 4 20 ) )\nEngine ( e MaxVelocity ( 40 ) )", "engine")
    assert s.mass_kg == 500.0 and s.length_m == 20.0 and s.max_velocity_ms == 40.0  # m/s


def test_unknown_unit_is_a_unit_error_in_strict_mode(tmp_path):
    p = write(tmp_path / "x.wag", "Wagon ( w\n\tMass ( 84tonnes )\n\tORTSBearingType ( Roller )\n)\n")
    with pytest.raises(UnitError) as exc:
        read_stock(p)
    assert exc.value.line == 4 and "tonnes" in str(exc.value)
    d = Diagnostics(strict=False)
    assert read_stock(p, diagnostics=d).mass_kg == 84.0  # lenient: factor 1, as Open Rails
    assert len(d.findings) == 1


def test_bad_enum_values_are_format_errors(tmp_path):
    p = write(tmp_path / "x.wag", "Wagon ( w ORTSBearingType ( Ball ) Type ( Freight ) )\n")
    with pytest.raises(FormatError, match="bearing type"):
        read_stock(p)
    d = Diagnostics(strict=False)
    assert read_stock(p, diagnostics=d).bearing_type == "Default" and d.findings


# -- Davis filling (docs/physics.md §3.2) ------------------------------------------------------------------


def test_davis_worked_example_50t_freight():
    s = stock_text(
        "Wagon ( w Type ( Freight ) Mass ( 50t ) Size ( 3m 4m 15m ) "
        "ORTSNumberAxles ( 4 ) ORTSBearingType ( Friction ) )"
    )
    assert s.davis_a == pytest.approx(834.71, rel=1e-3)
    assert s.davis_b == pytest.approx(24.679, rel=1e-3)
    assert s.davis_c == pytest.approx(1.4375, rel=1e-3)
    assert s.davis_force_n(20.0) == pytest.approx(1903.3, rel=1e-3)
    assert s.davis_force_n(-20.0) == s.davis_force_n(20.0)
    assert s.is_davis_friction and s.frontal_area_m2 == 12.0


def test_davis_light_vehicle_and_given_values_kept():
    # 10 t on 4 axles: T/axles < 5 -> cT = 9.4·√T, cN = 12.5, cB = 0.009
    s = stock_text(
        "Wagon ( w Type ( Freight ) Mass ( 10t ) Size ( 3m 4m 10m ) "
        "ORTSNumberAxles ( 4 ) ORTSBearingType ( Grease ) ORTSDavis_B ( 7 ) )"
    )
    t = 10000 / TON_US
    assert s.davis_a == pytest.approx((9.4 * math.sqrt(t) * t + 12.5 * 4) * LBF)
    assert s.davis_b == 7.0  # given: not replaced
    s = stock_text(
        "Wagon ( w Type ( Carriage ) Mass ( 40t ) Size ( 3m 4m 20m ) "
        "ORTSBearingType ( Low ) ORTSDavisDragConstant ( 0.001 ) ORTSWagonFrontalArea ( 10m^2 ) )"
    )
    t = 40000 / TON_US
    assert s.num_axles == 4  # no ORTSNumberAxles, no NumWheels: default 4
    assert s.davis_a == pytest.approx((1.5 * t + 11 * 4) * LBF)
    assert s.davis_b == pytest.approx(0.015 * t * LBF_MPH)
    assert s.davis_c == pytest.approx(10 / FT2 * 0.001 * LBF_MPH2)


def test_davis_a_b_missing_without_bearing_type_falls_back_to_friction_even_with_c():
    s = stock_text(
        "Wagon ( w Type ( Freight ) Mass ( 50t ) Size ( 3m 4m 15m ) NumWheels ( 4 ) "
        "ORTSDavis_A ( 800 ) ORTSDavis_C ( 2 ) Friction ( 10N/m/s 0 20mph 1N/m/s 2 ) )"
    )
    # V2 = 20 mph > 10 mph: not FCalc -> plain-bearing Davis formulas, C from drag x area
    assert not s.is_davis_friction
    assert s.davis_a == pytest.approx(834.71, rel=1e-3) and s.davis_b == pytest.approx(24.679, rel=1e-3)
    assert s.davis_c == pytest.approx(1.4375, rel=1e-3)
    assert s.friction0_n == pytest.approx(2 * s.davis_a)


def test_no_davis_and_no_friction_block_is_noted():
    d = Diagnostics()
    s = stock_from_document(parse_text(HEADER + "Wagon ( w Mass ( 20t ) )"), d, "wagon")
    assert (s.davis_a, s.davis_b, s.davis_c, s.friction0_n) == (0.0, 0.0, 0.0, 0.0)
    assert any("no ORTSDavis values and no Friction block" in f.message for f in d.findings)


# -- the MSTS Friction least-squares fallback ------------------------------------------------


def numeric_fit(c1: float, e1: float, v2: float, c2: float, e2: float) -> tuple[float, float, float]:
    """Least squares of A + Bv + Cv² against y0 + C2·v^E2 on [V2, 80 mph], computed as a
    weighted discrete fit on Gauss-Legendre nodes (an independent numerical check)."""
    a, b = v2, 80 * 0.44704
    x, w = np.polynomial.legendre.leggauss(400)
    v = (b - a) / 2 * x + (a + b) / 2
    w = w * (b - a) / 2
    f = c1 * v2**e1 + c2 * v2 + c2 * v**e2
    basis = np.stack([np.ones_like(v), v, v * v], axis=1)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(basis * sw[:, None], f * sw, rcond=None)
    return tuple(float(c) for c in coef)


@pytest.mark.parametrize(
    "params",
    [
        (1500.0, -0.1, 4 * 0.44704, 18.0, 1.8),
        (10.0, -1.0, 0.5, 3.3, 1.5),
        (200.0, 0.0, 0.0, 9.0, 2.0),  # V2 = 0 with E1 = 0 is allowed (0^0 = 1)
        (50.0, 0.3, 4.44, 0.7, 2.4),
    ],
)
def test_fcalc_fit_matches_numerical_least_squares(params):
    a, b, c, f0 = fcalc_davis(*params)
    assert (a, b, c) == pytest.approx(numeric_fit(*params), rel=1e-7, abs=1e-9)
    c1, e1 = params[0], params[1]
    assert f0 == pytest.approx(c1 * (0.0025 * 0.44704) ** e1 if e1 < 0 else c1)


def test_fcalc_fit_is_exact_for_a_quadratic():
    # E2 = 2: f(v) = y0 + C2·v², so the fit is exact: A = y0, B = 0, C = C2
    a, b, c, _ = fcalc_davis(100.0, 0.0, 2.0, 3.0, 2.0)
    assert (a, b, c) == pytest.approx((106.0, 0.0, 3.0), abs=1e-8)


def test_degenerate_friction_data(tmp_path):
    with pytest.raises(ValueError):
        fcalc_davis(10.0, -1.0, 0.0, 1.0, 1.0)  # 0 ** -1
    p = write(
        tmp_path / "x.wag",
        "Wagon ( w Type ( Freight ) Mass ( 50t ) Size ( 3m 4m 15m )\n"
        "\tFriction ( 10N/m/s -1 0mph 1N/m/s 1 )\n)\n",
    )
    with pytest.raises(FormatError, match="infinite"):
        read_stock(p)
    d = Diagnostics(strict=False)
    s = read_stock(p, diagnostics=d)
    assert s.davis_a == pytest.approx(834.71, rel=1e-3) and s.friction0_n == pytest.approx(2 * s.davis_a)


# -- couplers (§10.3) -----------------------------------------------------------------------


def couplers(body: str):
    return stock_text(f"Wagon ( w {body} )").couplers


def test_r0_processing_uses_the_stiffness_known_when_r0_is_read():
    before, after = couplers("""
      Coupling ( Spring ( Stiffness ( 3e6 1e6 ) r0 ( 0 0.1 ) ) )
      Coupling ( Spring ( r0 ( 0 0.1 ) Stiffness ( 3e6 1e6 ) ) )""")
    assert before.r0_diff == pytest.approx(0.05 * 1e6 / 4e6)  # 0.0125
    assert after.r0_diff == pytest.approx(0.05 * 2e7 / 3e7)  # defaults at that moment
    assert before.stiffness == after.stiffness == 7 * 4e6  # uses the final k1 + k2


def test_r0_clamping_and_rigid():
    small, big = couplers("""
      Coupling ( Spring ( Stiffness ( 1e7 1 ) r0 ( 0 0.01 ) ) )
      Coupling ( Spring ( r0 ( 0 1m ) ) )""")
    assert small.slack1 == small.r0_diff == 0.001 and big.slack1 == 0.1  # clamped
    (rigid,) = couplers("Coupling ( Spring ( r0 ( 0 0.1 ) ) CouplingHasRigidConnection ( 1 ) )")
    assert rigid.rigid and (rigid.slack1, rigid.slack2) == (0.0001, 0.0002)
    assert rigid.r0_diff == pytest.approx(0.05 * 2 / 3)
    assert couplers("Coupling ( CouplingHasRigidConnection ( ) )")[0].rigid  # empty: true
    assert not couplers("Coupling ( CouplingHasRigidConnection ( false ) )")[0].rigid


def test_r0x_nonzero_and_break_defaults():
    (c,) = couplers("Coupling ( Spring ( r0 ( 5cm 9cm ) Break ( 1e6 0 ) Stiffness ( -5 1 ) ) )")
    assert (c.r0x, c.r0_diff, c.slack1, c.slack2, c.stiffness) == (0.05, 0.012, 0.012, 0.035, 2e7)
    assert (c.break1, c.break2) == (1e6, 2e7)  # b2 = 0 -> 2e7
    assert (c.stiffness1, c.stiffness2) == (1e7, 2e7)  # a negative pair is ignored
    (d,) = couplers("Coupling ( Type ( Automatic ) )")
    assert (d.r0x, d.slack1, d.slack2, d.stiffness, d.break1) == (0.0, 0.012, 0.035, 7 * 3e7, 1e10)


def test_coupler_slots_first_read_is_slot_0_and_extra_blocks_replace():
    cs = couplers("""
      Coupling ( Spring ( Break ( 1 1 ) ) ) Coupling ( Spring ( Break ( 2 2 ) ) )
      Coupling ( Spring ( r0 ( 3m 3m ) ) ) Coupling ( Spring ( Break ( 4 4 ) ) )""")
    # 3rd block: slot 0 removed, its values go to the coupler now first (the old slot 1);
    # 4th block: slot 1 removed and replaced by the new coupler (Open Rails' MSTSWagon.Parse).
    assert [(c.break1, c.r0x) for c in cs] == [(2.0, 3.0), (4.0, 0.0)]
    s = stock_text("Wagon ( w Coupling ( Spring ( Break ( 1 1 ) ) ) )")
    assert s.coupler(True) is s.coupler(False)  # only one: a flipped car still uses slot 0
    assert stock_text("Wagon ( w )").coupler(True) is DEFAULT_COUPLER


def test_last_occurrence_wins_and_engine_paths_in_wag_are_ignored(tmp_path):
    s = stock_text("Wagon ( w Mass ( 10t ) ) Wagon ( Mass ( 12t ) )")
    assert s.mass_kg == 12000.0
    p = write(tmp_path / "x.wag", "Wagon ( w Mass ( 1t ) )\nEngine ( e MaxPower ( 1kW ) )\n")
    w = read_stock(p)
    assert w.kind == "wagon" and w.max_power_w is None and w.num_drive_axles == 0


def test_axle_counts():
    assert stock_text("Wagon ( w NumWheels ( 2 ) )").num_axles == 2
    assert stock_text("Wagon ( w NumWheels ( 8 ) )").num_axles == 4  # 6+ -> default 4
    eng = stock_text(
        "Wagon ( w Type ( Engine ) NumWheels ( 8 ) ORTSNumberAxles ( 2 ) ) Engine ( e NumWheels ( 3 ) )",
        "engine",
    )
    assert (eng.num_axles, eng.num_drive_axles) == (5, 3)
    eng = stock_text("Wagon ( w Type ( Engine ) ) Engine ( e NumWheels ( 12 ) )", "engine")
    assert (eng.num_axles, eng.num_drive_axles) == (4, 4)


def test_tractive_force_curves():
    s = stock_text(
        """
Wagon ( w Type ( Engine ) )
Engine ( e ORTSMaxTractiveForceCurves (
   0 ( 0 0 100km/h 0 )
   0.5 ( 0 150kN 10 150kN 40 40kN )
   1 ( 0 300kN 20 300kN 40 80kN ) ) )""",
        "engine",
    )
    curve = s.tractive_force_curve
    throttle, speed, force = curve
    assert throttle == (0.0, 0.5, 1.0)
    assert speed == pytest.approx((0.0, 10.0, 20.0, 100 / 3.6, 40.0))
    assert force[2][0] == 300e3 and force[1][2] == pytest.approx(150e3 - 110e3 / 3)
    assert curve(1.0, 30.0) == pytest.approx(190e3)
    assert curve(0.75, 10.0) == pytest.approx(0.5 * 150e3 + 0.5 * 300e3)
    assert curve(0.0, 5.0) == 0.0
    assert curve(1.0, 50.0) == pytest.approx(-30e3)  # linear extrapolation, as Open Rails
    assert pickle.loads(pickle.dumps(s)) == s


def test_generic_stand_ins():
    el = Stock.generic("engine")
    assert (el.kind, el.engine_type, el.num_axles, el.max_power_w) == ("engine", "Electric", 4, 5.6e6)
    assert el.is_davis_friction and el.davis_a > 0 and len(el.couplers) == 2
    coach = Stock.generic("wagon")
    freight = Stock.generic("wagon", "freight")
    assert coach.wagon_type == "Passenger" and freight.wagon_type == "Freight"
    assert Stock.generic("wagon", "coach") == coach
    assert Stock.generic("engine", "diesel").engine_type == "Diesel"
    with pytest.raises(ValueError):
        Stock.generic("wagon", "spaceship")


# -- consists -------------------------------------------------------------------------------


def test_sample_consists():
    p = read_consist(CONSISTS / "sample_passenger.con")
    assert p.name == "Sample passenger: EL 64 + 6 Bpmz" and p.label == "sample_passenger"
    assert p.serial == 1 and p.max_velocity == pytest.approx(200 / 3.6, abs=1e-5)
    assert [c.kind for c in p.cars] == ["engine"] + ["wagon"] * 6
    assert p.cars[0] == CarEntry("engine", 0, False, "sample_el64", "SAMPLE_EL")
    f = read_consist(CONSISTS / "sample_freight.con")
    assert len(f) == 21 and [i for i, c in enumerate(f.cars) if c.flipped] == [8]
    d = read_consist(CONSISTS / "sample_double.con")
    assert [c.flipped for c in d.cars] == [False, True] and {c.kind for c in d.cars} == {"engine"}


def test_resolve_sample_stock_case_insensitively():
    f = read_consist(CONSISTS / "sample_freight.con")
    stock = resolve_stock(f, SAMPLE_INSTALL)
    assert len(stock) == 21 and stock[0].engine_type == "Diesel"
    assert all(s is stock[1] for s in stock[1:])  # each file read once
    assert Path(stock[1].path).name == "SAMPLE_EANOS.wag"  # consist says Sample_Eanos
    d = read_consist(CONSISTS / "sample_double.con")
    lead, trail = resolve_stock(d, SAMPLE_INSTALL)
    assert lead is trail and lead.coupler(d.cars[1].flipped).slack1 < lead.coupler(False).slack1


def test_flip_zero_flips():
    d = Diagnostics()
    c = _consist(
        d,
        "Engine ( UiD ( 0 ) Flip ( 0 ) EngineData ( a B ) ) "
        'Wagon ( UiD ( 1 ) Flip ( ) WagonData ( "c d" "E F" ) ) '
        "Wagon ( UiD ( 2 ) WagonData ( g H ) )",
    )
    assert [car.flipped for car in c.cars] == [True, True, False]
    assert c.cars[1].file == "c d" and c.cars[1].folder == "E F"
    assert any("Flip ( 0 )" in f.message for f in d.findings)  # a note, never fatal


def test_consist_names_and_kind_from_data_block():
    d = Diagnostics()
    c = _consist(d, "Wagon ( UiD ( 5 ) EngineData ( x Y ) )", name=None, label="")
    assert c.name == "Loose consist." and c.cars[0].kind == "engine" and c.cars[0].extension == ".eng"
    assert any("read as an engine" in f.message for f in d.findings)
    assert (
        _consist(Diagnostics(), "Wagon ( UiD ( 1 ) WagonData ( x Y ) )", name=None, label="lbl").name == "lbl"
    )
    with pytest.raises(FormatError, match="no EngineData or WagonData"):
        _consist(Diagnostics(), "Wagon ( UiD ( 1 ) )")


def _consist(d: Diagnostics, cars: str, name: str | None = "N", label: str = "L"):
    from tdbtools.formats.consist import consist_from_document

    head = f'"{label}"' if label else ""
    nm = f'Name ( "{name}" )' if name is not None else ""
    return consist_from_document(
        parse_text(f"{HEADER}Train ( TrainCfg ( {head} {nm} MaxVelocity ( 100km/h 1 ) {cars} ) )"), d
    )


def test_openrails_override_is_preferred(tmp_path):
    root = tmp_path
    write(root / "TRAINS/TRAINSET/Stock/w.wag", "Wagon ( w Mass ( 10t ) )\n")
    write(
        root / "TRAINS/TRAINSET/Stock/OPENRAILS/W.WAG",
        'include ( "../w.wag" )\nWagon ( ORTSBearingType ( Roller ) Mass ( 12t ) )\n',
    )
    write(
        root / "TRAINS/CONSISTS/c.con", "Train ( TrainCfg ( c Wagon ( UiD ( 0 ) WagonData ( w stock ) ) ) )\n"
    )
    (s,) = resolve_stock(read_consist(root / "TRAINS/CONSISTS/c.con"), root)
    assert s.mass_kg == 12000.0 and s.bearing_type == "Roller" and "OPENRAILS" in s.path


def test_stand_in_heuristic():
    def car(kind, file, folder):
        return stand_in_variant(CarEntry(kind, 0, False, file, folder))

    assert car("engine", "freightloco", "x") == "electric"
    assert car("wagon", "Eanos_loaded", "Goods wagons") == "freight"
    assert car("wagon", "TGV2NR5D226", "RTGV2N760") == "passenger"
    assert car("wagon", "coach_wagon", "x") == "passenger"  # a coach word wins


# -- DK24's consists (their rolling stock is not installed) --------------------------------


@needs_dk24
def test_every_dk24_consist_parses():
    files = sorted((DK24 / "TRAINS" / "CONSISTS").glob("*.con"))
    assert len(files) == 94
    consists = [read_consist(f) for f in files]
    cars = [c for con in consists for c in con.cars]
    assert len(cars) == 952 and sum(c.flipped for c in cars) == 104
    assert sum(c.kind == "engine" for c in cars) == 227
    assert all(con.max_velocity and con.max_velocity > 0 for con in consists)
    assert any(c.uid < 0 for c in cars)  # real files have negative UiDs


@needs_dk24
def test_dk24_missing_stock_is_a_route_error_listing_every_file():
    con = read_consist(DK24 / "TRAINS" / "CONSISTS" / "DSB IC3 VIA x1.con")
    with pytest.raises(RouteError) as exc:
        resolve_stock(con, DK24)
    folder = DK24 / "TRAINS" / "TRAINSET" / "DSB IC3 VIA"
    expected = (folder / "mfaVIA.eng", folder / "ffVIA.wag", folder / "mfbVIA.eng")
    assert exc.value.missing == expected
    for p in expected:
        assert str(p) in str(exc.value)


@needs_dk24
def test_dk24_stand_ins_resolve_with_warnings():
    con = read_consist(DK24 / "TRAINS" / "CONSISTS" / "DSB IC3 VIA x1.con")
    with pytest.warns(StandInWarning) as record:
        stock = resolve_stock(con, DK24, stand_in=True)
    assert [s.kind for s in stock] == ["engine", "wagon", "engine"]
    assert stock[1].wagon_type == "Passenger" and stock[0] is stock[2]
    messages = [str(w.message) for w in record]
    assert len(messages) == 3 and "ffVIA.wag" in messages[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StandInWarning)
        every = [
            resolve_stock(read_consist(f), DK24, stand_in=True)
            for f in sorted((DK24 / "TRAINS" / "CONSISTS").glob("*.con"))
        ]
    assert sum(len(s) for s in every) == 952


def test_records_pickle():
    s = read_stock(TRAINSET / "SAMPLE_EL" / "SAMPLE_EL64.eng")
    assert pickle.loads(pickle.dumps(s)) == s
    c = read_consist(CONSISTS / "sample_freight.con")
    assert pickle.loads(pickle.dumps(c)) == c


# -- brake-shoe friction (docs/physics.md §3.5) ---------------------------------------------------


def test_brake_shoe_friction_is_read_as_km_h_and_mu():
    s = stock_text("Wagon ( w MaxBrakeForce ( 40kN ) ORTSBrakeShoeFriction ( 0 0.4 20 0.3 100 0.2 ) )")
    c = s.brake_shoe_friction
    assert c.speed_kmh == (0.0, 20.0, 100.0) and c.mu == (0.4, 0.3, 0.2)
    assert c(10 / 3.6) == pytest.approx(0.35) and c(-10 / 3.6) == pytest.approx(0.35)
    assert c.factor(0.0) == 1.0 and c.factor(60 / 3.6) == pytest.approx(0.25 / 0.4)
    # linear past the last point (Open Rails' Interpolator), clamped at 1 % of the force
    assert c(140 / 3.6) == pytest.approx(0.15) and c.factor(1000.0) == 0.01
    v = np.array([0.0, 10 / 3.6, 60 / 3.6, 140 / 3.6, 1000.0])
    assert c.factors(v) == pytest.approx([c.factor(x) for x in v], rel=1e-12)
    assert pickle.loads(pickle.dumps(s)) == s
    assert stock_text("Wagon ( w MaxBrakeForce ( 40kN ) )").brake_shoe_friction is None


def test_brake_shoe_factor_is_clamped_to_the_standstill_force():
    # μ rising with speed never gives more than MaxBrakeForce; a table starting above
    # 0 km/h is extrapolated to 0 km/h for μ(0)
    c = stock_text("Wagon ( w ORTSBrakeShoeFriction ( 10 0.3 30 0.5 ) )").brake_shoe_friction
    assert c(0.0) == pytest.approx(0.2) and c.factor(30 / 3.6) == 1.0
    assert c.factor(5 / 3.6) == 1.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("0 0.4", "at least two"),
        ("0 0.4 10 -0.1", "negative"),
        ("10 0.4 5 0.3", "speeds must increase"),
        ("10 0.4 10 0.3", "speeds must increase"),
        ("0 0.4 10km/h 0.3", "expected a number"),
        ("0 nan 10 0.3", "not a finite number"),
        ("0 0.4 10 inf", "not a finite number"),
        ("0 0 10 0.3", "at 0 km/h must be positive"),
        ("20 0.1 40 0.3", "at 0 km/h must be positive"),  # extrapolates to −0.1
        ("0 0.4 ( 1 ) 0.3", "expected a number"),
        (" ".join(f"{k} 0.3" for k in range(101)), "at most 100"),
    ],
)
def test_bad_brake_shoe_tables_are_located_errors_and_dropped(tmp_path, body, message):
    p = write(
        tmp_path / "x.wag",
        f"Wagon ( w\n\tORTSBearingType ( Roller )\n\tORTSBrakeShoeFriction ( {body} )\n)\n",
    )
    with pytest.raises(FormatError, match=message) as exc:
        read_stock(p)
    assert exc.value.line == 5 and "ORTSBrakeShoeFriction" in str(exc.value)
    d = Diagnostics(strict=False)
    s = read_stock(p, diagnostics=d)
    assert s.brake_shoe_friction is None and len(d.findings) == 1  # constant force, as without one


def test_brake_shoe_odd_count_drops_the_last_value_and_the_last_block_wins(tmp_path):
    p = write(
        tmp_path / "x.wag",
        "Wagon ( w ORTSBearingType ( Roller ) ORTSBrakeShoeFriction ( 0 0.4 10 0.3 20 ) )\n",
    )
    d = Diagnostics(strict=False)
    assert read_stock(p, diagnostics=d).brake_shoe_friction.speed_kmh == (0.0, 10.0)
    assert "odd number" in str(d.findings[0])
    s = stock_text(
        "Wagon ( w ORTSBrakeShoeFriction ( 0 0.4 10 0.3 ) ORTSBrakeShoeFriction ( 0 0.5 10 0.25 ) )"
    )
    assert s.brake_shoe_friction.mu == (0.5, 0.25)
    d = Diagnostics(strict=False)
    s = stock_from_document(
        parse_text(
            HEADER + "Wagon ( w ORTSBrakeShoeFriction ( 0 0.4 10 0.3 ) ORTSBrakeShoeFriction ( 0 ) )", "<w>"
        ),
        d,
        "wagon",
    )
    assert s.brake_shoe_friction is None  # an unusable last block removes the earlier one


def test_the_sample_stock_has_no_brake_shoe_curve():
    files = sorted(TRAINSET.rglob("*.[ew][na][gg]"))
    assert len(files) == 4
    for f in files:
        assert read_stock(f).brake_shoe_friction is None, f
