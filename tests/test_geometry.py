"""Geometries from primitives and set operations (cgmpinn_jax.geometry): sampling
under jit and vmap, outward normals, uniformity, grids, dtypes and argument checks."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from cgmpinn_jax.geometry import Ball, Box, Difference, Disk, Geometry, Intersection, Polygon, Union
from cgmpinn_jax.geometry._base import _first_valid

CENTRES = ((0.3, 0.3), (-0.3, 0.3), (0.3, -0.3), (-0.3, -0.3))
ELL = ((0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (1.0, 1.0), (1.0, 2.0), (0.0, 2.0))  # counter-clockwise
HEXAGON_CW = tuple((math.cos(-k * math.pi / 3), math.sin(-k * math.pi / 3)) for k in range(6))


def plate_with_holes() -> Geometry:
    """The square [-0.5, 0.5]^2 minus four disks of radius 0.1 at (+-0.3, +-0.3)."""
    geom = Box((-0.5, -0.5), (0.5, 0.5), name="square")
    for i, c in enumerate(CENTRES):
        geom = geom - Disk(c, 0.1, name=f"hole{i}")
    return geom


PLATE = plate_with_holes()
PLATE_AREA = 1.0 - 4 * math.pi * 0.01
HOLES_LENGTH = 4 * 2 * math.pi * 0.1

GEOMETRIES = {
    "box1d": Box((-1.0,), (2.0,)),
    "box2d": Box((0.0, -1.0), (2.0, 1.0)),
    "box3d": Box((0.0, 0.0, 0.0), (1.0, 2.0, 0.5)),
    "disk": Disk((0.5, -0.5), 0.7),
    "ball5d": Ball((0.0, 1.0, 0.0, 0.0, -1.0), 1.5),
    "polygon_ccw": Polygon(ELL, name="ell"),
    "polygon_cw": Polygon(HEXAGON_CW, name="hex"),
    "plate": PLATE,
    "union": Box((0.0, 0.0), (2.0, 1.0), name="a") | Disk((2.0, 0.5), 0.5, name="b"),
    "intersection": Disk((0.0, 0.0), 1.0, name="a") & Box((0.0, -2.0), (2.0, 2.0), name="b"),
}
# geometries without acute corners: every boundary point's inward and outward steps of 1e-3
# stay on their side (the union and the lens have corners where a step can cross another part)
OUTWARD = ("box1d", "box2d", "box3d", "disk", "ball5d", "polygon_ccw", "polygon_cw", "plate")


@pytest.mark.parametrize("label", sorted(GEOMETRIES))
def test_sampling_under_jit_and_vmap_and_outward_normals(label):
    geom, n, eps = GEOMETRIES[label], 200, 1e-3

    def one(key):
        k1, k2 = jax.random.split(key)
        xi = geom.sample_interior(k1, n)
        xb, nb = geom.sample_boundary(k2, n)
        checks = (
            geom.contains(xi),
            geom.on_boundary(xb),
            geom.on_boundary(xi),
            geom.contains(xb + eps * nb),
            geom.contains(xb - eps * nb),
            geom.normal(xb),
        )
        return xi, xb, nb, checks

    xi, xb, nb, (inside, on, interior_on, out_step_in, in_step_in, normal) = jax.jit(jax.vmap(one))(
        jax.random.split(jax.random.key(0), 3)
    )
    assert xi.shape == xb.shape == nb.shape == (3, n, geom.dim)
    assert xi.dtype == xb.dtype == nb.dtype == jnp.float32
    # (an interior point may, rarely, fall within the 1e-6 tolerance of the boundary)
    assert bool(inside.all()) and bool(on.all()) and float(interior_on.mean()) < 0.01
    # distinct keys, distinct draws
    assert not np.allclose(xi[0], xi[1]) and not np.allclose(xi[1], xi[2])
    assert not np.allclose(xb[0], xb[1]) and not np.allclose(xb[1], xb[2])
    # unit normals, the ones normal() gives; outward: a step out leaves the domain, a step in stays
    np.testing.assert_allclose(jnp.linalg.norm(nb, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(normal, nb, atol=1e-6)
    if label in OUTWARD:
        assert not bool(out_step_in.any()) and bool(in_step_in.all())


def test_hole_normals_point_to_the_disk_centre():
    @jax.jit
    def hole(key):
        x, n = PLATE.sample_boundary(key, 200, name="hole2")
        return (
            x,
            n,
            PLATE.normal(x, name="hole2"),
            PLATE.on_boundary(x, name="hole2"),
            PLATE.on_boundary(x, "square"),
        )

    x, n, normal, on_hole, on_square = hole(jax.random.key(1))
    np.testing.assert_allclose(n, (jnp.asarray(CENTRES[2]) - x) / 0.1, atol=1e-4)
    np.testing.assert_allclose(normal, n, atol=1e-6)
    assert bool(on_hole.all()) and not bool(on_square.any())


def test_plate_area_and_uniform_interior():
    # the domain's area by plain Monte Carlo in the square, and the construction's estimate
    z = jax.random.uniform(jax.random.key(2), (400_000, 2), minval=-0.5, maxval=0.5)
    assert float(PLATE.contains(z).mean()) == pytest.approx(PLATE_AREA, rel=0.01)
    assert PLATE.measure() == pytest.approx(PLATE_AREA, rel=0.01)
    # interior samples: the share in the annulus 0.1 < |x - c| < 0.2 around one hole is its area's
    # share
    x = jax.jit(lambda k: PLATE.sample_interior(k, 40_000))(jax.random.key(3))
    r = np.linalg.norm(np.asarray(x) - np.asarray(CENTRES[0]), axis=1)
    assert r.min() >= 0.1 - 1e-6
    share = math.pi * (0.2**2 - 0.1**2) / PLATE_AREA
    assert np.mean(r < 0.2) == pytest.approx(
        share, abs=5 * math.sqrt(share * (1 - share) / x.shape[0])
    )


def test_plate_boundary_fraction_on_holes():
    x, n = PLATE.sample_boundary(jax.random.key(4), 100_000)
    x, n = np.asarray(x), np.asarray(n)
    inside_square = np.max(np.abs(x), axis=1) < 0.5 - 1e-6
    # the points off the square's edges are on the circles, their normals toward the centres
    centre = np.asarray(CENTRES)[
        np.argmin([np.linalg.norm(x - c, axis=1) for c in CENTRES], axis=0)
    ]
    np.testing.assert_array_equal(
        np.abs(np.linalg.norm(x - centre, axis=1) - 0.1) < 1e-5, inside_square
    )
    np.testing.assert_allclose(n[inside_square], (centre - x)[inside_square] / 0.1, atol=1e-4)
    expected = HOLES_LENGTH / (4.0 + HOLES_LENGTH)
    assert inside_square.mean() == pytest.approx(expected, rel=0.02)
    assert PLATE.boundary_measure() == pytest.approx(4.0 + HOLES_LENGTH, rel=1e-6)
    assert PLATE.boundary_measure("hole2") == pytest.approx(2 * math.pi * 0.1, rel=1e-6)


def test_disk_boundary_angles_are_uniform():
    disk = GEOMETRIES["disk"]
    x, n = disk.sample_boundary(jax.random.key(5), 4000)
    angle = np.arctan2(np.asarray(n[:, 1]), np.asarray(n[:, 0]))
    assert stats.kstest((angle + np.pi) / (2 * np.pi), "uniform").pvalue > 1e-3
    np.testing.assert_allclose(
        np.linalg.norm(np.asarray(x) - np.asarray(disk.center), axis=1), 0.7, atol=1e-5
    )


@pytest.mark.parametrize("label", ["disk", "ball5d"])
def test_ball_interior_radii_follow_r_to_the_d(label):
    ball = GEOMETRIES[label]
    x = ball.sample_interior(jax.random.key(6), 4000)
    r = np.linalg.norm(np.asarray(x) - np.asarray(ball.center), axis=1) / ball.radius
    assert stats.kstest(r**ball.dim, "uniform").pvalue > 1e-3


def test_polygon_interior_and_boundary_are_uniform():
    ell = GEOMETRIES["polygon_ccw"]
    x = np.asarray(ell.sample_interior(jax.random.key(7), 30_000))
    # the three unit squares of the L have equal shares
    shares = [np.mean((x[:, 0] < 1) & (x[:, 1] < 1)), np.mean(x[:, 0] > 1), np.mean(x[:, 1] > 1)]
    np.testing.assert_allclose(shares, 1 / 3, atol=0.015)
    xb, nb = ell.sample_boundary(jax.random.key(8), 40_000)
    # the edge y = 0 (length 2) holds a quarter of the perimeter 8
    on_bottom = np.asarray(xb[:, 1]) == 0.0
    assert on_bottom.mean() == pytest.approx(0.25, abs=0.01)
    np.testing.assert_array_equal(
        np.asarray(nb)[on_bottom], np.tile([0.0, -1.0], (on_bottom.sum(), 1))
    )
    assert ell.measure() == 3.0 and ell.boundary_measure() == 8.0
    hexagon = GEOMETRIES["polygon_cw"]
    assert hexagon.measure() == pytest.approx(3 * math.sqrt(3) / 2)


def test_box_faces():
    box = GEOMETRIES["box2d"]  # [0, 2] x [-1, 1]
    assert box.face_names() == ("box.x0-", "box.x0+", "box.x1-", "box.x1+")
    x, n = box.sample_boundary(jax.random.key(9), 20_000)
    # faces in proportion to their lengths (2, 2, 2, 2); the normal tells the face
    faces = np.argmax(np.abs(np.asarray(n)), axis=1) * 2 + (np.asarray(n).sum(axis=1) > 0)
    np.testing.assert_allclose(np.bincount(faces, minlength=4) / 20_000, 0.25, atol=0.015)
    lower, upper = np.array(box.lower), np.array(box.upper)
    np.testing.assert_array_equal(
        np.asarray(x)[np.arange(20_000), faces // 2],
        np.where(faces % 2 == 1, upper[faces // 2], lower[faces // 2]),
    )
    x, n = box.sample_boundary(jax.random.key(10), 50, name="box.x1+")
    assert bool((x[:, 1] == 1.0).all()) and bool((n == jnp.array([0.0, 1.0])).all())
    assert bool(box.on_boundary(x, name="box.x1+").all()) and not bool(
        box.on_boundary(x, name="box.x0-").any()
    )
    assert (
        box.boundary_measure("box.x0+") == 2.0
        and box.boundary_measure() == 8.0
        and box.measure() == 4.0
    )


def test_box_1d_end_points():
    rod = GEOMETRIES["box1d"]  # [-1, 2]
    x, n = rod.sample_boundary(jax.random.key(11), 4000)
    x, n = np.asarray(x[:, 0]), np.asarray(n[:, 0])
    assert set(np.unique(x)) == {-1.0, 2.0}
    np.testing.assert_array_equal(n, np.where(x == 2.0, 1.0, -1.0))
    assert np.mean(x == 2.0) == pytest.approx(0.5, abs=0.03)
    assert rod.boundary_measure() == 2.0 and rod.measure() == 3.0


def test_set_operation_parts_and_measures():
    # touching boxes: the shared face is not boundary; the union is the box [0, 2] x [0, 1]
    pair = Box((0.0, 0.0), (1.0, 1.0), name="left") | Box((1.0, 0.0), (2.0, 1.0), name="right")
    assert pair.boundary_measure() == pytest.approx(6.0, rel=0.02)
    assert pair.boundary_measure("left") == pytest.approx(3.0, rel=0.02)
    assert pair.measure() == pytest.approx(2.0, rel=0.01)
    # a box inside a taller one sharing its bottom: one copy of the shared edge
    nested = Box((0.0, 0.0), (1.0, 1.0), name="low") | Box((0.0, 0.0), (3.0, 2.0), name="big")
    assert nested.boundary_measure() == pytest.approx(10.0, rel=0.02)
    # a lens and its boundary parts
    lens = GEOMETRIES["intersection"]
    assert lens.boundary_names() == ("a", "b")
    assert lens.measure() == pytest.approx(math.pi / 2, rel=0.01)
    assert lens.boundary_measure("a") == pytest.approx(math.pi, rel=0.02)
    assert lens.boundary_measure("b") == pytest.approx(
        2.0, rel=0.04
    )  # an eighth of the box: 1% noise
    union = GEOMETRIES["union"]
    assert union.measure() == pytest.approx(2.0 + math.pi * 0.25 / 2, rel=0.01)
    assert (
        isinstance(union, Union)
        and isinstance(PLATE, Difference)
        and isinstance(lens, Intersection)
    )
    # hashable and equal by value, so jit can close over them
    assert hash(plate_with_holes()) == hash(PLATE) and plate_with_holes() == PLATE


def test_union_interior_is_uniform_over_the_overlap():
    pair = Disk((0.0, 0.0), 1.0, name="left") | Disk((1.0, 0.0), 1.0, name="right")
    lens = 2 * math.pi / 3 - math.sqrt(3) / 2
    assert pair.measure() == pytest.approx(2 * math.pi - lens, rel=0.01)
    assert pair.boundary_measure() == pytest.approx(8 * math.pi / 3, rel=0.01)
    x = np.asarray(pair.sample_interior(jax.random.key(15), 20_000))
    in_both = (np.linalg.norm(x, axis=1) <= 1) & (np.linalg.norm(x - [1.0, 0.0], axis=1) <= 1)
    assert in_both.mean() == pytest.approx(lens / (2 * math.pi - lens), abs=0.015)


def test_nested_differences_compose_the_normal_flips():
    # a box minus a ring: the ring's outer circle points into the ring, its inner one out of the
    # core
    ring = Disk((0.0, 0.0), 0.4, name="outer") - Disk((0.0, 0.0), 0.2, name="inner")
    geom = Box((-1.0, -1.0), (1.0, 1.0), name="wall") - ring
    assert geom.measure() == pytest.approx(4 - math.pi * (0.16 - 0.04), rel=0.01)

    @jax.jit
    def parts(key):
        k1, k2 = jax.random.split(key)
        xo, no = geom.sample_boundary(k1, 300, name="outer")
        xi, ni = geom.sample_boundary(k2, 300, name="inner")
        steps = [
            geom.contains(x + s * 1e-3 * n) for x, n in ((xo, no), (xi, ni)) for s in (1.0, -1.0)
        ]
        return xo, no, xi, ni, geom.normal(xo), geom.normal(xi), steps

    xo, no, xi, ni, normal_o, normal_i, (out_o, in_o, out_i, in_i) = parts(jax.random.key(16))
    np.testing.assert_allclose(no, -xo / 0.4, atol=1e-5)
    np.testing.assert_allclose(ni, xi / 0.2, atol=1e-5)
    np.testing.assert_allclose(normal_o, no, atol=1e-6)
    np.testing.assert_allclose(normal_i, ni, atol=1e-6)
    assert not bool(out_o.any() | out_i.any()) and bool(in_o.all() & in_i.all())


def test_grid_leaves_out_the_holes():
    points, mask = PLATE.grid((41, 41))
    assert mask.shape == (41 * 41,) and mask.dtype == bool and points.shape == (mask.sum(), 2)
    axes = [np.linspace(-0.5, 0.5, 41)] * 2
    full = np.stack([m.reshape(-1) for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
    np.testing.assert_array_equal(points, full[mask])
    for c in CENTRES:
        assert np.linalg.norm(points - np.asarray(c), axis=1).min() >= 0.1 - 1e-9
    # (0.3, 0.2) lies on a hole's circle: in the closed domain
    assert np.any(np.all(np.isclose(points, [0.3, 0.2]), axis=1))
    assert mask.sum() == pytest.approx(41 * 41 * PLATE_AREA, rel=0.03)


def test_float64_under_enable_x64():
    geoms = [
        GEOMETRIES[label] for label in ("polygon_cw", "plate")
    ]  # the plate: boxes, balls, set operations

    @jax.jit
    def draw(key):
        out = []
        for geom in geoms:
            x = geom.sample_interior(key, 8)
            xb, nb = geom.sample_boundary(key, 8)
            out.append((x, xb, nb, geom.contains(x).all() & geom.on_boundary(xb).all()))
        return out

    with jax.enable_x64(True):
        for x, xb, nb, ok in draw(jax.random.key(13)):
            assert x.dtype == xb.dtype == nb.dtype == jnp.float64
            assert bool(ok)
    assert GEOMETRIES["plate"].sample_interior(jax.random.key(13), 8).dtype == jnp.float32


def test_shortfall_repeats_valid_rows_and_never_returns_invalid_ones():
    x = jnp.arange(6.0)[:, None]
    (out,) = _first_valid(jnp.array([False, True, False, True, False, False]), 5, x)
    assert out[:, 0].tolist() == [1.0, 3.0, 1.0, 3.0, 1.0]
    (out,) = _first_valid(jnp.zeros(6, bool), 2, x)
    assert bool(jnp.isnan(out).all())


SQUARE = Box((0.0, 0.0), (1.0, 1.0))
BAD = [
    (lambda: Box((0.0, 0.0), (1.0,)), "Box: lower and upper must have the same length"),
    (lambda: Box((0.0, 1.0), (1.0, 0.5)), "Box: lower must be < upper.*coordinate 1"),
    (lambda: Box((0.0,), (0.0,)), "Box: lower must be < upper"),
    (lambda: Box(("a",), (1.0,)), "Box: lower must be a sequence of numbers"),
    (lambda: Box((float("nan"),), (1.0,)), "Box: lower must be finite"),
    (lambda: Box((), ()), "Box: lower must be a non-empty"),
    (lambda: Box((0.0,), (1.0,), name=""), "Box: name must be a non-empty string"),
    (lambda: Ball((0.0, 0.0), 0.0), "Ball: radius must be a finite number > 0"),
    (lambda: Ball((0.0, 0.0), -1.0), "Ball: radius must be a finite number > 0"),
    (lambda: Ball((0.0,), 1.0), "Ball: center must have at least 2 coordinates"),
    (lambda: Disk((0.0, 0.0, 0.0), 1.0), "Disk: center must have 2 coordinates"),
    (lambda: Polygon(((0, 0), (1, 0))), "Polygon: vertices must hold at least 3 distinct"),
    (lambda: Polygon(((0, 0), (1, 0), (2, 0))), "Polygon: the vertices enclose zero area"),
    (
        lambda: Polygon(((0, 0), (1, 0), (1, 0), (0, 1))),
        "Polygon: vertices 1 and 2 coincide.*zero length.*no normal",
    ),
    (lambda: Polygon(((0, 0), (1, 0), (1, 1), (0, 0))), "Polygon: vertices 3 and 0 coincide"),
    (lambda: Polygon(((0, 0), (2, 2), (2, 0), (0, 1))), "Polygon: edges 0 and 2 intersect"),
    (lambda: Polygon(((0, 0), (2, 0), (1, 0), (1, 1))), "Polygon: edges 0 and 1 fold back"),
    (lambda: Polygon(((0, 0), 1, 2)), "Polygon: vertices must be a sequence of"),
    (lambda: SQUARE | Ball((0.0, 0.0, 0.0), 1.0), "Union: the operands have different dimensions"),
    (
        lambda: SQUARE - Disk((0.5, 0.5), 0.2, name="box"),
        r"Difference\(Box\('box'\), Disk\('box'\)\).*'box'.*both",
    ),
    (lambda: SQUARE | Disk((2.0, 2.0), 0.2, name="box.x0-"), "Union.*'box.x0-'.*both operands"),
    (
        lambda: SQUARE - Box((-1.0, -1.0), (2.0, 2.0), name="big"),
        r"Difference\(Box\('box'\), Box\('big'\)\).*empty",
    ),
    (
        lambda: SQUARE & Disk((3.0, 3.0), 1.0),
        r"Intersection\(Box\('box'\), Disk\('disk'\)\).*empty",
    ),
    (
        lambda: Disk((0.0, 0.0), 1.0, name="a") & Disk((1.8, 1.8), 1.0, name="b"),
        "Intersection.*empty",
    ),
    (
        lambda: SQUARE | Disk((0.5, 0.5), 0.2),
        r"Union\(Box\('box'\), Disk\('disk'\)\).*'disk'.*vanishes",
    ),
    (lambda: SQUARE - Disk((3.0, 0.5), 0.2), r"Difference.*'disk'.*vanishes entirely"),
    (
        lambda: SQUARE.sample_interior(jax.random.key(0), -1),
        r"Box\('box'\).sample_interior: n must be",
    ),
    (lambda: SQUARE.sample_boundary(jax.random.key(0), 2.5), "sample_boundary: n must be"),
    (
        lambda: SQUARE.sample_boundary(jax.random.key(0), 2, name="wall"),
        "unknown boundary part name 'wall'",
    ),
    (
        lambda: PLATE.normal(jnp.zeros((3, 2)), name="hole9"),
        "normal: unknown boundary part name 'hole9'",
    ),
    (
        lambda: SQUARE.contains(jnp.zeros((3, 3))),
        r"contains: x must have shape \(n, 2\), got \(3, 3\)",
    ),
    (lambda: SQUARE.on_boundary(jnp.zeros(2)), r"on_boundary: x must have shape \(n, 2\)"),
    (lambda: SQUARE.grid((4,)), "grid: sizes must be a tuple of 2 ints"),
    (lambda: SQUARE.grid((4, 0)), "grid: sizes must be a tuple of 2 ints >= 1"),
]


@pytest.mark.parametrize("make, match", BAD, ids=[m for _, m in BAD])
def test_bad_input_raises_value_error_naming_it(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_non_geometry_operands():
    with pytest.raises(TypeError, match="operand b must be a Geometry"):
        Union(SQUARE, 3)
    with pytest.raises(TypeError):
        SQUARE | 3


def test_empty_face_of_a_set_operation_raises_when_sampled():
    cut = Box((0.0, 0.0), (2.0, 1.0), name="long") - Box((1.0, -1.0), (3.0, 2.0), name="cut")
    assert cut.measure() == pytest.approx(1.0, rel=0.01)
    assert cut.boundary_measure("long.x0+") == 0.0
    with pytest.raises(ValueError, match="'long.x0\\+' is empty"):
        cut.sample_boundary(jax.random.key(0), 4, name="long.x0+")
    x, n = jax.jit(lambda k: cut.sample_boundary(k, 100, name="cut"))(jax.random.key(0))
    np.testing.assert_allclose(x[:, 0], 1.0)
    np.testing.assert_array_equal(n, jnp.tile(jnp.array([1.0, 0.0]), (100, 1)))
    assert cut.boundary_measure("cut") == pytest.approx(
        1.0, rel=0.05
    )  # a tenth of the box: 1.2% noise


def test_integer_points_are_accepted_as_floats():
    """contains / on_boundary / normal take integer coordinates (cast to the float dtype)."""
    box = Box((0.0, 0.0), (2.0, 2.0))
    x = np.array([[1, 1], [3, 1], [0, 1]])
    np.testing.assert_array_equal(np.asarray(box.contains(x)), [True, False, True])
    np.testing.assert_array_equal(np.asarray(box.on_boundary(x)), [False, False, True])
    np.testing.assert_allclose(np.asarray(box.normal(x[2:])), [[-1.0, 0.0]])
