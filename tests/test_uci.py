"""jtk.envs.uci: the shipped UCI tables are the published files, and a corrupted copy is refused."""

import hashlib
import shutil

import numpy as np
import pytest

from jtk.envs import uci

# Independent of the module's table: the sums of the provenance note that came with the copies, and the shapes and
# target columns the UCI repository documents.
PUBLISHED = {
    "boston": ("baadf72995725d76efe787b664e1f083388c79ba21ef9a7990d87f774184735a", 506, 13, 13),
    "concrete": ("43d290fd2c2a399ad7e62c45cab5337ba94ece69ebdcf5875aa668cb886243de", 1030, 8, 8),
    "energy": ("7f8bf024cea437267d56be99b7af7bb3faebec8a7bccfbb20d06d52d9372a950", 768, 8, 8),
    "wine": ("3ba41eaf4ab562088cf47b5c9dca2b4de2a330c3ee38a7920b4527a09574d5c1", 1599, 11, 11),
    "yacht": ("00dfecc0fc01ddd4c90b558a3ac11b246df8ebcfea130724223475a9a67f0ea1", 308, 6, 6),
    "kin8nm": ("a694ce0c7a21390f2bd2a205c36f2482cd974637a207038696716e22f3bbe810", 8192, 8, 8),
    "naval": ("de0ea69da1efaab8b9655ffed828547d10dd68c1fb8c6e0163e6a988def393a6", 11934, 17, 16),
    "power_plant": ("daebd20c408dfc5c4979604f240e891be162c3a5d00d662380aa669044a1fb31", 9568, 4, 4),
}  # name → (SHA-256 of data.txt, rows, inputs under "authors", inputs under "index")


def test_the_eight_data_sets_of_the_paper_are_shipped():
    assert tuple(uci.UCI_DATASETS) == ("boston", "concrete", "energy", "wine", "yacht", "kin8nm", "naval",
                                       "power_plant")


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_shipped_file_has_the_published_sum_shape_and_target(name):
    sha, rows, k_authors, k_index = PUBLISHED[name]
    path = uci.uci_path(name) / "data.txt"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    raw = np.loadtxt(path)
    df = uci.load_uci(name)
    assert df.shape == (rows, k_authors + 1) and df.columns[-1] == "target"
    np.testing.assert_array_equal(df["target"].to_numpy(), raw[:, -1])  # the authors' loader: the last column
    np.testing.assert_array_equal(df.drop(columns="target").to_numpy(), raw[:, :-1])
    by_index = uci.load_uci(name, columns="index")
    target = int((uci.uci_path(name) / "index_target.txt").read_text())
    assert by_index.shape == (rows, k_index + 1)
    np.testing.assert_array_equal(by_index["target"].to_numpy(), raw[:, target])
    assert df.notna().all().all()


def test_naval_is_the_one_table_where_the_conventions_differ():
    a, b = uci.load_uci("naval"), uci.load_uci("naval", columns="index")
    raw = np.loadtxt(uci.uci_path("naval") / "data.txt")
    np.testing.assert_array_equal(a["target"], raw[:, 17])  # turbine decay (Wang et al.'s code)
    np.testing.assert_array_equal(b["target"], raw[:, 16])  # compressor decay (the index file)
    assert "x16" in a.columns and "x16" not in b.columns


def _copy(tmp_path, name="yacht"):
    shutil.copytree(uci.uci_path(name), tmp_path / name)
    return tmp_path / name


def test_a_verified_copy_elsewhere_loads(tmp_path):
    _copy(tmp_path)
    assert uci.load_uci("yacht", root=tmp_path).equals(uci.load_uci("yacht"))


@pytest.mark.parametrize("corrupt", ["one digit", "truncated", "appended row", "index file"])
def test_a_corrupted_copy_is_refused_naming_file_and_sums(tmp_path, corrupt):
    folder = _copy(tmp_path)
    data = folder / "data.txt"
    text = data.read_text()
    if corrupt == "one digit":
        i = text.index("0.") + 2
        data.write_text(text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:])
    elif corrupt == "truncated":
        data.write_text(text[: len(text) // 2])
    elif corrupt == "appended row":
        data.write_text(text + text.splitlines()[0] + "\n")
    else:
        data = folder / "index_target.txt"
        data.write_text("0\n")
    with pytest.raises(uci.UCIChecksumError, match="corrupted") as err:
        uci.load_uci("yacht", root=tmp_path)
    assert str(data) in str(err.value) and uci.UCI_DATASETS["yacht"].sha256[data.name] in str(err.value)


def test_a_missing_file_is_refused(tmp_path):
    (_copy(tmp_path) / "index_features.txt").unlink()
    with pytest.raises(uci.UCIChecksumError, match="missing"):
        uci.load_uci("yacht", root=tmp_path)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="name"):
        uci.load_uci("housing")
    with pytest.raises(ValueError, match="columns"):
        uci.load_uci("yacht", columns="last")
